"""Storage of agent profiles: one function per named query of ``sql/profiles.sql``."""

from __future__ import annotations

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


async def profile_content(conn: Connection, tenant_id: TenantId, agent_name: str) -> str | None:
    value = await conn.fetchval(QUERIES["profile_content"], tenant_id, agent_name)
    return None if value is None else str(value)


async def upsert_profile(
    conn: Connection, tenant_id: TenantId, agent_id: int, content: str
) -> None:
    await conn.execute(QUERIES["upsert_profile"], tenant_id, agent_id, content)


async def delete_agent_profiles(conn: Connection, tenant_id: TenantId, agent_id: int) -> int:
    return int(await conn.fetchval(QUERIES["delete_agent_profiles"], tenant_id, agent_id))
