"""Storage of the embedding queue: one function per named query of ``sql/queue.sql``.

Tenant functions run in a tenant transaction (RLS applies); ``claim_embedding_jobs``,
``fail_embedding_jobs``, ``queue_backlog``, the ``embedding_settings`` pair and
``tenant_ids`` are admin work of the worker, which drains every tenant's jobs;
``vacuum_rewritten`` is maintenance of the ``reembed`` command, outside any transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import asyncpg

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId

ItemKind = Literal["mem", "ep"]


@dataclasses.dataclass(frozen=True, slots=True)
class Job:
    """A claimed job; ``token`` (its new run_after) must match when it is settled."""

    tenant_id: TenantId
    id: int
    item_kind: ItemKind
    item_id: int
    attempts: int
    token: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ItemText:
    kind: ItemKind
    id: int
    text: str
    hash: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Backlog:
    """Jobs still to run (all of them: none is given up), those retrying after a failed
    attempt, and the age of the oldest."""

    pending: int
    retrying: int
    oldest_pending_seconds: float | None = None
    passages_pending: int = 0
    """Jobs whose row is longer than one window: their passages are built with them."""


@dataclasses.dataclass(frozen=True, slots=True)
class EnqueueBatch:
    cursor: int | None
    added: int


@dataclasses.dataclass(frozen=True, slots=True)
class ModelRecord:
    model: str
    dimension: int


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector (``[x,y,...]``); ``repr`` round-trips floats."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


async def enqueue_embedding(
    conn: Connection, tenant_id: TenantId, kind: ItemKind, item_id: int, error: str | None
) -> None:
    await conn.execute(QUERIES["enqueue_embedding"], tenant_id, kind, item_id, error)


async def delete_embedding_job(
    conn: Connection, tenant_id: TenantId, kind: ItemKind, item_id: int
) -> int:
    return int(await conn.fetchval(QUERIES["delete_embedding_job"], tenant_id, kind, item_id))


async def delete_agent_embedding_jobs(conn: Connection, tenant_id: TenantId, agent_id: int) -> int:
    return int(await conn.fetchval(QUERIES["delete_agent_embedding_jobs"], tenant_id, agent_id))


async def claim_embedding_jobs(
    conn: Connection, limit: int, lease_seconds: float, tenant_id: TenantId | None
) -> list[Job]:
    records = await conn.fetch(QUERIES["claim_embedding_jobs"], limit, lease_seconds, tenant_id)
    return [_job(r) for r in records]


def _job(r: asyncpg.Record) -> Job:
    return Job(
        tenant_id=TenantId(r["tenant_id"]),
        id=r["id"],
        item_kind=r["item_kind"],
        item_id=r["item_id"],
        attempts=r["attempts"],
        token=r["token"],
    )


async def claim_embedding_items(
    conn: Connection,
    tenant_id: TenantId,
    items: Sequence[tuple[ItemKind, int]],
    lease_seconds: float,
) -> list[tuple[Job, ItemText | None]]:
    """The claimed jobs among ``items`` of one tenant, each with its row's current text
    (None when the row is gone)."""
    records = await conn.fetch(
        QUERIES["claim_embedding_items"],
        tenant_id,
        [kind for kind, _ in items],
        [item_id for _, item_id in items],
        lease_seconds,
    )
    return [(_job(r), _claimed_text(r)) for r in records]


def _claimed_text(r: asyncpg.Record) -> ItemText | None:
    if r["text"] is None:
        return None
    return ItemText(r["item_kind"], r["item_id"], r["text"], bytes(r["hash"]))


async def embedding_texts(
    conn: Connection, tenant_id: TenantId, memory_ids: Sequence[int], episode_ids: Sequence[int]
) -> list[ItemText]:
    records = await conn.fetch(
        QUERIES["embedding_texts"], tenant_id, list(memory_ids), list(episode_ids)
    )
    return [ItemText(r["kind"], r["id"], r["text"], bytes(r["hash"])) for r in records]


@dataclasses.dataclass(frozen=True, slots=True)
class Settled:
    """What ``settle_embeddings`` did: rows that took their vector, jobs deleted and
    re-queued (only jobs whose claim token still matched are finished)."""

    embedded: int
    finished: int
    requeued: int
    passages: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class PassageVector:
    """One passage of a row being settled: its record id, index, character span and
    vector."""

    item_id: int
    idx: int
    start: int
    end: int
    vector: Sequence[float]


async def settle_embeddings(
    conn: Connection,
    tenant_id: TenantId,
    jobs: Sequence[Job],
    items: Sequence[tuple[ItemText, Sequence[float]] | None],
    model: str,
    passages: Sequence[PassageVector] = (),
    *,
    passages_on: bool = False,
) -> Settled:
    """Write the vectors of ``jobs``' rows (``items[i]`` is job i's text and vector, None
    when its row is gone) with their ``passages`` (a row that took its vector keeps
    exactly the passages given for it) and finish the jobs, in one statement."""
    values = {
        "tenant_id": tenant_id,
        "job_ids": [job.id for job in jobs],
        "tokens": [job.token for job in jobs],
        "kinds": [job.item_kind for job in jobs],
        "ids": [job.item_id for job in jobs],
        "hashes": [None if item is None else item[0].hash for item in items],
        "embeddings": [None if item is None else vector_text(item[1]) for item in items],
        "model": model,
        "passages_on": passages_on,
        "passage_ids": [p.item_id for p in passages],
        "passage_idx": [p.idx for p in passages],
        "passage_starts": [p.start for p in passages],
        "passage_ends": [p.end for p in passages],
        "passage_embeddings": [vector_text(p.vector) for p in passages],
    }
    record = await conn.fetchrow(
        QUERIES["settle_embeddings"], *arguments("settle_embeddings", values)
    )
    assert record is not None
    return Settled(
        int(record["embedded"]),
        int(record["finished"]),
        int(record["requeued"]),
        int(record["passages"]),
    )


async def fail_embedding_jobs(
    conn: Connection,
    jobs: Sequence[Job],
    errors: Sequence[str],
    delay: float,
    doublings: int,
    *,
    attempted: bool = True,
) -> None:
    """Back off ``jobs`` after a failed attempt (``delay * 2^min(attempts, doublings)``),
    or, when not ``attempted``, hand them back uncounted, due in ``delay`` seconds."""
    await conn.execute(
        QUERIES["fail_embedding_jobs"],
        [job.tenant_id for job in jobs],
        [job.id for job in jobs],
        [job.token for job in jobs],
        list(errors),
        delay,
        doublings,
        attempted,
    )


def _backlog(record: object) -> Backlog:
    assert isinstance(record, asyncpg.Record)
    oldest = record["oldest_pending_seconds"]
    return Backlog(
        pending=int(record["pending"]),
        retrying=int(record["retrying"]),
        oldest_pending_seconds=None if oldest is None else float(oldest),
        passages_pending=int(record["passages_pending"]),
    )


async def queue_status(conn: Connection, tenant_id: TenantId, fits: int | None = None) -> Backlog:
    """``fits``: the most characters of a text that fits one window (None: passages off)."""
    return _backlog(await conn.fetchrow(QUERIES["queue_status"], tenant_id, fits))


async def queue_backlog(
    conn: Connection, tenant_id: TenantId | None, fits: int | None = None
) -> Backlog:
    return _backlog(await conn.fetchrow(QUERIES["queue_backlog"], tenant_id, fits))


async def enqueue_unembedded(
    conn: Connection, tenant_id: TenantId, after: int, batch: int
) -> EnqueueBatch:
    record = await conn.fetchrow(QUERIES["enqueue_unembedded"], tenant_id, after, batch)
    assert record is not None
    return EnqueueBatch(cursor=record["cursor"], added=int(record["added"]))


async def enqueue_reembed(
    conn: Connection,
    tenant_id: TenantId,
    after: int,
    batch: int,
    *,
    model: str,
    dimension: int,
    every_row: bool,
    reset: bool,
) -> EnqueueBatch:
    record = await conn.fetchrow(
        QUERIES["enqueue_reembed"], tenant_id, after, batch, model, every_row, reset, dimension
    )
    assert record is not None
    return EnqueueBatch(cursor=record["cursor"], added=int(record["added"]))


@dataclasses.dataclass(frozen=True, slots=True)
class PassageCandidates:
    """One batch of the passage backfill: the rows that may need passages (their text
    and its hash), and the cursor to read on from (None at the end)."""

    cursor: int | None
    rows: list[ItemText]


async def passage_candidates(
    conn: Connection, tenant_id: TenantId, after: int, batch: int, fits: int
) -> PassageCandidates:
    records = await conn.fetch(QUERIES["passage_candidates"], tenant_id, after, batch, fits)
    rows = [
        ItemText(r["kind"], r["id"], r["text"], bytes(r["hash"]))
        for r in records
        if r["kind"] is not None
    ]
    return PassageCandidates(records[0]["cursor"] if records else None, rows)


async def enqueue_passage_jobs(
    conn: Connection, tenant_id: TenantId, rows: Sequence[ItemText]
) -> int:
    if not rows:
        return 0
    kinds, ids = [r.kind for r in rows], [r.id for r in rows]
    return int(await conn.fetchval(QUERIES["enqueue_passage_jobs"], tenant_id, kinds, ids))


async def passages_fit(conn: Connection, tenant_id: TenantId, rows: Sequence[ItemText]) -> int:
    if not rows:
        return 0
    kinds, ids, hashes = [r.kind for r in rows], [r.id for r in rows], [r.hash for r in rows]
    return int(await conn.fetchval(QUERIES["passages_fit"], tenant_id, kinds, ids, hashes))


async def embedding_settings(conn: Connection) -> ModelRecord | None:
    record = await conn.fetchrow(QUERIES["embedding_settings"])
    return None if record is None else ModelRecord(record["model"], record["dimension"])


async def record_embedding_settings(conn: Connection, model: str, dimension: int) -> None:
    await conn.execute(QUERIES["record_embedding_settings"], model, dimension)


VACUUM_TIMEOUT_SECS = 3600.0
"""How long ``vacuum_rewritten`` may run (the pool's command timeout is for calls, 30 s by
default; a vacuum of a large table with its HNSW indexes takes minutes). Past it the
vacuum is cancelled, which loses nothing: autovacuum comes later."""


async def vacuum_rewritten(conn: Connection) -> None:
    await conn.execute(QUERIES["vacuum_rewritten"], timeout=VACUUM_TIMEOUT_SECS)


async def tenant_ids(conn: Connection) -> list[TenantId]:
    records = await conn.fetch(QUERIES["tenant_ids"])
    return [TenantId(r["id"]) for r in records]
