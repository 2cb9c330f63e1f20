"""Storage of check_health's record checks (JSON shapes, timestamps, sources): one
function per query of ``sql/health_records.sql``.

Tenant-scoped (``$1``) and optionally agent-scoped by name (``None`` = every agent).
Repairs never touch locked memories.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class InvalidJson:
    bad_source: int
    bad_metadata: int
    repairable: int


@dataclasses.dataclass(frozen=True, slots=True)
class StampText:
    id: int
    text: str
    locked: bool


@dataclasses.dataclass(frozen=True, slots=True)
class StampForms:
    utc: int
    aware: int
    naive: int
    repairable: int
    locked_aware: int


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeTimes:
    id: int
    start_time: str | None
    end_time: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class SourceCount:
    count: int
    locked: int


@dataclasses.dataclass(frozen=True, slots=True)
class SourceRow:
    id: int
    source: Any


@dataclasses.dataclass(frozen=True, slots=True)
class Anonymous:
    sentinel: int
    unattributed: int


async def health_invalid_json(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> InvalidJson:
    record = await conn.fetchrow(QUERIES["health_invalid_json"], tenant_id, agent)
    assert record is not None
    return InvalidJson(record["bad_source"], record["bad_metadata"], record["repairable"])


async def health_reset_invalid_json(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> int:
    return int(await conn.fetchval(QUERIES["health_reset_invalid_json"], tenant_id, agent))


async def health_unparsed_timestamps(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> list[StampText]:
    rows = await conn.fetch(QUERIES["health_unparsed_timestamps"], tenant_id, agent)
    return [StampText(r["id"], r["timestamp_text"], r["locked"]) for r in rows]


async def health_repair_timestamps(
    conn: Connection,
    tenant_id: TenantId,
    ids: Sequence[int],
    texts: Sequence[str | None],
    times: Sequence[datetime | None],
) -> int:
    value = await conn.fetchval(
        QUERIES["health_repair_timestamps"], tenant_id, list(ids), list(texts), list(times)
    )
    return int(value)


async def health_timestamp_formats(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> StampForms:
    record = await conn.fetchrow(QUERIES["health_timestamp_formats"], tenant_id, agent)
    assert record is not None
    return StampForms(
        utc=record["utc"],
        aware=record["aware"],
        naive=record["naive"],
        repairable=record["repairable"],
        locked_aware=record["locked_aware"],
    )


async def health_normalise_timestamps(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> int:
    return int(await conn.fetchval(QUERIES["health_normalise_timestamps"], tenant_id, agent))


async def health_episode_times(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> list[EpisodeTimes]:
    rows = await conn.fetch(QUERIES["health_episode_times"], tenant_id, agent)
    return [EpisodeTimes(r["id"], r["start_time"], r["end_time"]) for r in rows]


async def health_set_episode_times(
    conn: Connection,
    tenant_id: TenantId,
    ids: Sequence[int],
    starts: Sequence[str | None],
    ends: Sequence[str | None],
) -> int:
    value = await conn.fetchval(
        QUERIES["health_set_episode_times"], tenant_id, list(ids), list(starts), list(ends)
    )
    return int(value)


async def health_missing_start_times(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> int:
    return int(await conn.fetchval(QUERIES["health_missing_start_times"], tenant_id, agent))


async def health_fill_start_times(conn: Connection, tenant_id: TenantId, agent: str | None) -> int:
    return int(await conn.fetchval(QUERIES["health_fill_start_times"], tenant_id, agent))


async def health_invalid_sources(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> SourceCount:
    record = await conn.fetchrow(QUERIES["health_invalid_sources"], tenant_id, agent)
    assert record is not None
    return SourceCount(record["count"], record["locked"])


async def health_invalid_source_rows(
    conn: Connection, tenant_id: TenantId, agent: str | None, limit: int
) -> list[SourceRow]:
    rows = await conn.fetch(QUERIES["health_invalid_source_rows"], tenant_id, agent, limit)
    return [SourceRow(r["id"], r["source"]) for r in rows]


async def health_set_sources(
    conn: Connection, tenant_id: TenantId, ids: Sequence[int], sources: Sequence[object]
) -> int:
    texts = [json.dumps(source) for source in sources]
    return int(await conn.fetchval(QUERIES["health_set_sources"], tenant_id, list(ids), texts))


async def health_anonymous_sources(
    conn: Connection, tenant_id: TenantId, agent: str | None
) -> Anonymous:
    record = await conn.fetchrow(QUERIES["health_anonymous_sources"], tenant_id, agent)
    assert record is not None
    return Anonymous(record["sentinel"], record["unattributed"])
