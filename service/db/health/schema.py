"""Storage of check_health's deployment checks: one function per query of
``sql/health_schema.sql``.

These read the catalogs and ``alembic_version`` only (no tenant data), in an admin
transaction, and never write: an index or policy is the operator's to repair.
"""

from __future__ import annotations

import dataclasses

from service.db.pool import Connection
from service.db.sql import QUERIES


@dataclasses.dataclass(frozen=True, slots=True)
class IndexState:
    name: str
    table: str
    method: str
    unique: bool
    valid: bool
    ready: bool
    live: bool


@dataclasses.dataclass(frozen=True, slots=True)
class TableSecurity:
    table: str
    enabled: bool
    forced: bool
    policies: tuple[str, ...]


async def health_alembic_revisions(conn: Connection) -> list[str]:
    return [str(r["version_num"]) for r in await conn.fetch(QUERIES["health_alembic_revisions"])]


async def health_index_states(conn: Connection) -> list[IndexState]:
    rows = await conn.fetch(QUERIES["health_index_states"])
    return [
        IndexState(
            name=r["index_name"],
            table=r["table_name"],
            method=r["method"],
            unique=r["is_unique"],
            valid=r["valid"],
            ready=r["ready"],
            live=r["live"],
        )
        for r in rows
    ]


async def health_table_security(conn: Connection) -> list[TableSecurity]:
    rows = await conn.fetch(QUERIES["health_table_security"])
    return [
        TableSecurity(r["table_name"], r["enabled"], r["forced"], tuple(r["policies"]))
        for r in rows
    ]
