"""Storage of persistence pauses: one function per named query of ``sql/pauses.sql``.

Times come from the database clock (``now()``), so every replica agrees on
when a pause ends regardless of its own clock.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class PauseRow:
    """A pause in force: its scope key ('' = tenant-wide), expiry and seconds left."""

    session_key: str
    expires_at: datetime
    remaining: float


async def upsert_pause(
    conn: Connection, tenant_id: TenantId, session_key: str, ttl_seconds: int, created_by: str
) -> datetime:
    expires_at: datetime = await conn.fetchval(
        QUERIES["upsert_pause"], tenant_id, session_key, ttl_seconds, created_by
    )
    return expires_at


async def delete_expired_pauses(conn: Connection, tenant_id: TenantId) -> None:
    await conn.execute(QUERIES["delete_expired_pauses"], tenant_id)


async def delete_pause(conn: Connection, tenant_id: TenantId, session_key: str) -> bool:
    """Whether a pause still in force was lifted."""
    return bool(await conn.fetchval(QUERIES["delete_pause"], tenant_id, session_key))


async def pauses_in_force(
    conn: Connection, tenant_id: TenantId, session_key: str
) -> list[PauseRow]:
    records = await conn.fetch(QUERIES["pauses_in_force"], tenant_id, session_key)
    return [PauseRow(r["session_key"], r["expires_at"], float(r["remaining"])) for r in records]


async def live_session_pauses(conn: Connection, tenant_id: TenantId, session_key: str) -> int:
    """How many other session keys of the tenant hold a pause in force, counted under the
    tenant's pause-arming lock (held to the end of the transaction)."""
    await conn.execute(QUERIES["lock_session_pauses"], tenant_id)
    return int(await conn.fetchval(QUERIES["live_session_pauses"], tenant_id, session_key))
