"""Storage of agents: the agent_id axis, resolved to internal ids per tenant."""

from __future__ import annotations

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


async def agent_id_by_name(conn: Connection, tenant_id: TenantId, name: str) -> int | None:
    value = await conn.fetchval(QUERIES["agent_id_by_name"], tenant_id, name)
    return None if value is None else int(value)


async def insert_agent(conn: Connection, tenant_id: TenantId, name: str) -> int | None:
    value = await conn.fetchval(QUERIES["insert_agent"], tenant_id, name)
    return None if value is None else int(value)


async def ensure_agent(conn: Connection, tenant_id: TenantId, name: str) -> int:
    """The agent's id, registering it on first use.

    Select first (the common case), insert when missing, and select again when a
    concurrent transaction inserted it between the two (its row is visible to
    the new statement once that transaction commits).
    """
    existing = await agent_id_by_name(conn, tenant_id, name)
    if existing is not None:
        return existing
    created = await insert_agent(conn, tenant_id, name)
    if created is not None:
        return created
    again = await agent_id_by_name(conn, tenant_id, name)
    if again is None:
        raise RuntimeError(f"agent {name!r} vanished during registration")
    return again


async def delete_agent(conn: Connection, tenant_id: TenantId, agent_id: int) -> None:
    await conn.execute(QUERIES["delete_agent"], tenant_id, agent_id)
