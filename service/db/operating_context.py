"""Storage of operating contexts: one function per named query of ``sql/context.sql``.

Tools read a context inside a tenant transaction; the operator CLI writes it
in an admin transaction, which must first call :func:`scope_admin_to_tenant`
because the table forces row-level security on its owner too.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class ContextRow:
    revision: str
    document: dict[str, Any]
    updated_at: datetime


async def operating_context(conn: Connection, tenant_id: TenantId) -> ContextRow | None:
    record = await conn.fetchrow(QUERIES["operating_context"], tenant_id)
    if record is None:
        return None
    return ContextRow(record["revision"], dict(record["document"]), record["updated_at"])


async def scope_admin_to_tenant(conn: Connection, tenant_id: TenantId) -> None:
    await conn.execute(QUERIES["scope_admin_to_tenant"], str(tenant_id))


async def upsert_operating_context(
    conn: Connection, tenant_id: TenantId, revision: str, document: dict[str, Any]
) -> datetime:
    value: datetime = await conn.fetchval(
        QUERIES["upsert_operating_context"], tenant_id, revision, document
    )
    return value


async def delete_operating_context(conn: Connection, tenant_id: TenantId) -> str | None:
    value = await conn.fetchval(QUERIES["delete_operating_context"], tenant_id)
    return None if value is None else str(value)
