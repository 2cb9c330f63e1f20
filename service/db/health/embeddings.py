"""Storage of check_health's embedding and queue checks: one function per query of
``sql/health_embeddings.sql``.

Tenant-scoped (``$1``) and optionally agent-scoped by name (``None`` = every agent).
Repairs never touch locked memories; a cleared vector is queued for a new one only
when a provider is configured.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId

ItemKind = Literal["mem", "ep"]


@dataclasses.dataclass(frozen=True, slots=True)
class Coverage:
    total: int
    missing: int
    unqueued: int


@dataclasses.dataclass(frozen=True, slots=True)
class Mismatch:
    memories: int
    episodes: int
    repairable: int


@dataclasses.dataclass(frozen=True, slots=True)
class StaleJobs:
    count: int
    dead: int
    orphaned: int


@dataclasses.dataclass(frozen=True, slots=True)
class SettledJobs:
    deleted: int
    rearmed: int


async def health_recorded_dimension(conn: Connection) -> int | None:
    value = await conn.fetchval(QUERIES["health_recorded_dimension"])
    return None if value is None else int(value)


async def health_embedding_coverage(
    conn: Connection, tenant_id: TenantId, agent: str | None, kind: ItemKind
) -> Coverage:
    record = await conn.fetchrow(QUERIES["health_embedding_coverage"], tenant_id, agent, kind)
    assert record is not None
    return Coverage(record["total"], record["missing"], record["unqueued"])


async def health_enqueue_unembedded(
    conn: Connection, tenant_id: TenantId, agent: str | None, kind: ItemKind
) -> int:
    return int(await conn.fetchval(QUERIES["health_enqueue_unembedded"], tenant_id, agent, kind))


async def health_dimension_mismatch(
    conn: Connection, tenant_id: TenantId, agent: str | None, width: int
) -> Mismatch:
    record = await conn.fetchrow(QUERIES["health_dimension_mismatch"], tenant_id, agent, width)
    assert record is not None
    return Mismatch(record["memories"], record["episodes"], record["repairable"])


async def health_clear_wrong_dimension(
    conn: Connection, tenant_id: TenantId, agent: str | None, width: int, requeue: bool
) -> int:
    value = await conn.fetchval(
        QUERIES["health_clear_wrong_dimension"], tenant_id, agent, width, requeue
    )
    return int(value)


async def health_stale_jobs(
    conn: Connection, tenant_id: TenantId, agent: str | None, max_attempts: int
) -> StaleJobs:
    record = await conn.fetchrow(QUERIES["health_stale_jobs"], tenant_id, agent, max_attempts)
    assert record is not None
    return StaleJobs(record["count"], record["dead"], record["orphaned"])


async def health_settle_stale_jobs(
    conn: Connection, tenant_id: TenantId, agent: str | None, max_attempts: int, provider: bool
) -> SettledJobs:
    record = await conn.fetchrow(
        QUERIES["health_settle_stale_jobs"], tenant_id, agent, max_attempts, provider
    )
    assert record is not None
    return SettledJobs(record["deleted"], record["rearmed"])


async def health_ann_index_widths(conn: Connection) -> list[int]:
    return [int(r["width"]) for r in await conn.fetch(QUERIES["health_ann_index_widths"])]


async def health_missing_passages(
    conn: Connection, tenant_id: TenantId, agent: str | None, fits: int
) -> Coverage:
    """Long embedded rows without passages for their text (``missing``) and those of them
    without a job (``unqueued``); ``total`` is ``missing``."""
    values = {"tenant_id": tenant_id, "agent": agent, "fits": fits}
    record = await conn.fetchrow(
        QUERIES["health_missing_passages"], *arguments("health_missing_passages", values)
    )
    assert record is not None
    missing = int(record["missing"])
    return Coverage(total=missing, missing=missing, unqueued=int(record["unqueued"]))


async def health_enqueue_passages(
    conn: Connection, tenant_id: TenantId, agent: str | None, fits: int
) -> int:
    values = {"tenant_id": tenant_id, "agent": agent, "fits": fits}
    statement = QUERIES["health_enqueue_passages"]
    return int(await conn.fetchval(statement, *arguments("health_enqueue_passages", values)))
