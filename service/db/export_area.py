"""Storage of the export area's catalogue: one function per query of ``sql/export_area.sql``.

Every function runs in a tenant transaction (row-level security applies). Writes of
one tenant's area are serialised by :func:`lock_export_area` for the rest of the
transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class ExportFile:
    """One file of a tenant's export area, as the catalogue knows it."""

    name: str
    storage: str
    agents: tuple[str, ...]
    writer_key_id: str
    size_bytes: int
    created_at: datetime
    expires_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class NewExportFile:
    name: str
    storage: str
    agents: Sequence[str]
    writer_key_id: str
    size_bytes: int
    retention_seconds: float


async def export_file(conn: Connection, tenant_id: TenantId, name: str) -> ExportFile | None:
    record = await conn.fetchrow(QUERIES["export_file"], tenant_id, name)
    if record is None:
        return None
    return ExportFile(
        name=record["name"],
        storage=record["storage"],
        agents=tuple(record["agents"]),
        writer_key_id=record["writer_key_id"],
        size_bytes=int(record["size_bytes"]),
        created_at=record["created_at"],
        expires_at=record["expires_at"],
    )


async def lock_export_area(conn: Connection, tenant_id: TenantId) -> None:
    await conn.execute(QUERIES["lock_export_area"], tenant_id)


async def export_area_usage(conn: Connection, tenant_id: TenantId, name: str) -> int:
    return int(await conn.fetchval(QUERIES["export_area_usage"], tenant_id, name))


async def save_export_file(conn: Connection, tenant_id: TenantId, new: NewExportFile) -> str | None:
    """Record ``new``; the storage name of the version it replaced (None when none)."""
    record = await conn.fetchrow(
        QUERIES["save_export_file"],
        tenant_id,
        new.name,
        new.storage,
        list(new.agents),
        new.writer_key_id,
        new.size_bytes,
        new.retention_seconds,
    )
    assert record is not None
    replaced: str | None = record["replaced"]
    return replaced


async def delete_expired_export_files(conn: Connection, tenant_id: TenantId) -> list[str]:
    records = await conn.fetch(QUERIES["delete_expired_export_files"], tenant_id)
    return [r["storage"] for r in records]


async def delete_agent_export_files(conn: Connection, tenant_id: TenantId, agent: str) -> list[str]:
    records = await conn.fetch(QUERIES["delete_agent_export_files"], tenant_id, agent)
    return [r["storage"] for r in records]


async def export_storage_names(conn: Connection, tenant_id: TenantId) -> set[str]:
    records = await conn.fetch(QUERIES["export_storage_names"], tenant_id)
    return {r["storage"] for r in records}
