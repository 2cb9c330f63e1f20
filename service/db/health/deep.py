"""Storage of deep_check: one function per query of ``sql/health_deep.sql``.

Every query is about one agent of one tenant, named exactly (``''`` is a name like
any other). Repairs never touch locked memories.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db.health.content import MemoryText
from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class StaleProfile:
    count: int
    last_updated: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeRange:
    id: int
    summary: str
    start_time: str
    end_time: str


@dataclasses.dataclass(frozen=True, slots=True)
class Calibration:
    embedded: int
    calibrated: bool
    agent_scope: bool | None
    calibrated_at: datetime | None
    scoring_version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class NearDuplicates:
    rows_scanned: int
    other_width: int
    pairs: int
    samples: list[dict[str, Any]]


def _texts(rows: Sequence[Any]) -> list[MemoryText]:
    return [MemoryText(r["id"], r["content"], r["locked"]) for r in rows]


async def health_deep_anonymous(
    conn: Connection, tenant_id: TenantId, agent: str
) -> list[MemoryText]:
    return _texts(await conn.fetch(QUERIES["health_deep_anonymous"], tenant_id, agent))


async def health_deep_name_sources(
    conn: Connection, tenant_id: TenantId, ids: Sequence[int], names: Sequence[str]
) -> int:
    value = await conn.fetchval(
        QUERIES["health_deep_name_sources"], tenant_id, list(ids), list(names)
    )
    return int(value)


async def health_deep_short(
    conn: Connection, tenant_id: TenantId, agent: str, max_length: int
) -> list[MemoryText]:
    return _texts(await conn.fetch(QUERIES["health_deep_short"], tenant_id, agent, max_length))


async def health_deep_delete_short(
    conn: Connection, tenant_id: TenantId, agent: str, max_length: int
) -> int:
    value = await conn.fetchval(QUERIES["health_deep_delete_short"], tenant_id, agent, max_length)
    return int(value)


async def health_deep_stale_profile(
    conn: Connection, tenant_id: TenantId, agent: str, days: int
) -> StaleProfile:
    record = await conn.fetchrow(QUERIES["health_deep_stale_profile"], tenant_id, agent, days)
    assert record is not None
    return StaleProfile(record["count"], record["last_updated"])


async def health_deep_episode_ranges(
    conn: Connection, tenant_id: TenantId, agent: str
) -> list[EpisodeRange]:
    rows = await conn.fetch(QUERIES["health_deep_episode_ranges"], tenant_id, agent)
    return [EpisodeRange(r["id"], r["summary"], r["start_time"], r["end_time"]) for r in rows]


async def health_deep_orphans(
    conn: Connection,
    tenant_id: TenantId,
    agent: str,
    ids: Sequence[int],
    starts: Sequence[datetime],
    ends: Sequence[datetime],
) -> list[int]:
    rows = await conn.fetch(
        QUERIES["health_deep_orphans"], tenant_id, agent, list(ids), list(starts), list(ends)
    )
    return [int(r["id"]) for r in rows]


async def health_deep_calibration(conn: Connection, tenant_id: TenantId, agent: str) -> Calibration:
    record = await conn.fetchrow(QUERIES["health_deep_calibration"], tenant_id, agent)
    assert record is not None
    return Calibration(
        embedded=record["embedded"],
        calibrated=record["calibrated"],
        agent_scope=record["agent_scope"],
        calibrated_at=record["calibrated_at"],
        scoring_version=record["scoring_version"],
    )


async def health_deep_near_duplicates(
    conn: Connection,
    tenant_id: TenantId,
    agent: str,
    row_cap: int,
    threshold: float,
    sample_limit: int,
) -> NearDuplicates:
    record = await conn.fetchrow(
        QUERIES["health_deep_near_duplicates"], tenant_id, agent, row_cap, threshold, sample_limit
    )
    assert record is not None
    return NearDuplicates(
        rows_scanned=record["rows_scanned"],
        other_width=record["other_width"],
        pairs=record["pairs"],
        samples=list(record["samples"]),
    )
