"""Storage of check_health's content checks and stats: one function per query of
``sql/health.sql``.

Every query is tenant-scoped (``$1``) and optionally agent-scoped by the agent's
*name* (``$2``, ``None`` = every agent of the tenant); an unknown name matches
nothing. Repairs never touch locked memories.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryText:
    id: int
    content: str
    locked: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Surplus:
    """Rows a repair deletes as duplicates (``ids``) and, in the same order, the row each
    one's declarations move to (``keepers``; None carries nothing)."""

    ids: list[int]
    keepers: list[int | None]


@dataclasses.dataclass(frozen=True, slots=True)
class Rewrite:
    """Rows rewritten, and those left as surplus because their new content is empty or
    already held (health_delete_surplus deletes them)."""

    rewritten: int
    surplus: Surplus


@dataclasses.dataclass(frozen=True, slots=True)
class Duplicates:
    groups: int
    total_extra: int
    repairable: int


@dataclasses.dataclass(frozen=True, slots=True)
class Counted:
    count: int
    repairable: int


@dataclasses.dataclass(frozen=True, slots=True)
class Oversized:
    count: int
    max_len: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class Stats:
    memories: int
    episodes: int
    profiles: int
    pending_tasks: int
    approx_bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class AxisValue:
    axis: str
    value: str
    count: int


async def health_pattern_memories(
    conn: Connection, tenant_id: TenantId, agent: str | None, pattern: str
) -> list[MemoryText]:
    rows = await conn.fetch(QUERIES["health_pattern_memories"], tenant_id, agent, pattern)
    return [MemoryText(r["id"], r["content"], r["locked"]) for r in rows]


async def health_oversized_memories(
    conn: Connection, tenant_id: TenantId, agent: str | None, max_length: int
) -> list[MemoryText]:
    rows = await conn.fetch(QUERIES["health_oversized_memories"], tenant_id, agent, max_length)
    return [MemoryText(r["id"], r["content"], r["locked"]) for r in rows]


async def health_rewrite_memories(
    conn: Connection,
    tenant_id: TenantId,
    ids: Sequence[int],
    contents: Sequence[str],
    requeue: bool,
) -> Rewrite:
    record = await conn.fetchrow(
        QUERIES["health_rewrite_memories"], tenant_id, list(ids), list(contents), requeue
    )
    assert record is not None
    return Rewrite(record["rewritten"], Surplus(record["surplus"], record["keepers"]))


async def health_duplicate_content(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> Duplicates:
    record = await conn.fetchrow(QUERIES["health_duplicate_content"], tenant_id, agent)
    assert record is not None
    return Duplicates(record["groups"], int(record["total_extra"]), record["repairable"])


async def health_duplicate_surplus(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> Surplus:
    record = await conn.fetchrow(QUERIES["health_duplicate_surplus"], tenant_id, agent)
    assert record is not None
    return Surplus(record["surplus"], record["keepers"])


async def health_delete_surplus(conn: Connection, tenant_id: TenantId, surplus: Surplus) -> int:
    return int(
        await conn.fetchval(
            QUERIES["health_delete_surplus"], tenant_id, surplus.ids, surplus.keepers
        )
    )


async def health_empty_content(conn: Connection, tenant_id: TenantId, agent: str | None) -> Counted:
    record = await conn.fetchrow(QUERIES["health_empty_content"], tenant_id, agent)
    assert record is not None
    return Counted(record["count"], record["repairable"])


async def health_delete_empty(conn: Connection, tenant_id: TenantId, agent: str | None) -> int:
    return int(await conn.fetchval(QUERIES["health_delete_empty"], tenant_id, agent))


async def health_oversized_profiles(
    conn: Connection, tenant_id: TenantId, agent: str | None, max_length: int
) -> Oversized:
    record = await conn.fetchrow(QUERIES["health_oversized_profiles"], tenant_id, agent, max_length)
    assert record is not None
    return Oversized(record["count"], record["max_len"])


async def health_cut_profiles(
    conn: Connection, tenant_id: TenantId, agent: str | None, max_length: int
) -> int:
    return int(await conn.fetchval(QUERIES["health_cut_profiles"], tenant_id, agent, max_length))


async def health_missing_profiles(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> list[str]:
    rows = await conn.fetch(QUERIES["health_missing_profiles"], tenant_id, agent)
    return [str(r["name"]) for r in rows]


async def health_stats(conn: Connection, tenant_id: TenantId, agent: str | None) -> Stats:
    record = await conn.fetchrow(QUERIES["health_stats"], tenant_id, agent)
    assert record is not None
    return Stats(
        memories=record["memories"],
        episodes=record["episodes"],
        profiles=record["profiles"],
        pending_tasks=record["pending_tasks"],
        approx_bytes=int(record["approx_bytes"]),
    )


async def health_axis_values(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> list[AxisValue]:
    rows = await conn.fetch(QUERIES["health_axis_values"], tenant_id, agent)
    return [AxisValue(r["axis"], r["value"], r["count"]) for r in rows]
