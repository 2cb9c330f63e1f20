"""Storage side of export, import and merge: one function per query of ``sql/portability.sql``.

Exports read through server-side cursors in fixed-size batches (the caller's
transaction must be open, normally a snapshot one), so memory stays flat
however large the tenant. Imports write whole batches in one statement each,
with the unique indexes doing the exact-bucket dedup. Merges walk the source
agent in id-ordered chunks, each one set-based statement.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime

import asyncpg
from pgvector import Vector

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.errors import ServiceError
from service.models import TenantId


class WriteRefused(ServiceError):
    """The database refused an import or merge write (the transaction is lost)."""


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """Translate a driver error of a bulk write into WriteRefused, once, here."""
    try:
        yield
    except asyncpg.PostgresError as exc:
        raise WriteRefused(f"the database refused the write: {exc}") from exc


@dataclasses.dataclass(frozen=True, slots=True)
class ItemCounts:
    memories: int
    episodes: int
    profiles: int


async def item_counts(conn: Connection, tenant_id: TenantId, agent_id: int | None) -> ItemCounts:
    record = await conn.fetchrow(QUERIES["item_counts"], tenant_id, agent_id)
    assert record is not None
    return ItemCounts(record["memories"], record["episodes"], record["profiles"])


def _floats(value: Vector | None) -> list[float] | None:
    return None if value is None else value.to_list()


def _vector(values: Sequence[float] | None) -> Vector | None:
    return None if values is None else Vector(list(values))


@dataclasses.dataclass(frozen=True, slots=True)
class ExportMemory:
    id: int
    agent_name: str
    msg_id: str
    content: str
    source: object
    timestamp_text: str
    metadata: object
    created_at: datetime
    project_id: str
    channel: str
    locked: bool
    recall_count: int
    last_recalled_at: datetime | None
    embedding: list[float] | None


async def export_memories(
    conn: Connection, tenant_id: TenantId, agent_id: int | None, embeddings: bool, batch: int
) -> AsyncIterator[list[ExportMemory]]:
    """Batches of memories in id order (needs an open transaction)."""
    cursor = await conn.cursor(QUERIES["export_memories"], tenant_id, agent_id, embeddings)
    while records := await cursor.fetch(batch):
        yield [
            ExportMemory(
                r["id"],
                r["agent_name"],
                r["msg_id"],
                r["content"],
                r["source"],
                r["timestamp_text"],
                r["metadata"],
                r["created_at"],
                r["project_id"],
                r["channel"],
                r["locked"],
                r["recall_count"],
                r["last_recalled_at"],
                _floats(r["embedding"]),
            )
            for r in records
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class ExportEpisode:
    id: int
    agent_name: str
    summary: str
    keywords: str
    start_time: str | None
    end_time: str | None
    created_at: datetime
    resolved: bool
    project_id: str
    channel: str
    embedding: list[float] | None


async def export_episodes(
    conn: Connection, tenant_id: TenantId, agent_id: int | None, embeddings: bool, batch: int
) -> AsyncIterator[list[ExportEpisode]]:
    """Batches of episodes in id order (needs an open transaction)."""
    cursor = await conn.cursor(QUERIES["export_episodes"], tenant_id, agent_id, embeddings)
    while records := await cursor.fetch(batch):
        yield [
            ExportEpisode(
                r["id"],
                r["agent_name"],
                r["summary"],
                r["keywords"],
                r["start_time"],
                r["end_time"],
                r["created_at"],
                r["resolved"],
                r["project_id"],
                r["channel"],
                _floats(r["embedding"]),
            )
            for r in records
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class ExportProfile:
    agent_name: str
    user_id: str
    content: str
    updated_at: datetime
    project_id: str


async def export_profiles(
    conn: Connection, tenant_id: TenantId, agent_id: int | None, batch: int
) -> AsyncIterator[list[ExportProfile]]:
    """Batches of profiles by owner and user_id (needs an open transaction)."""
    cursor = await conn.cursor(QUERIES["export_profiles"], tenant_id, agent_id)
    while records := await cursor.fetch(batch):
        yield [
            ExportProfile(
                r["agent_name"], r["user_id"], r["content"], r["updated_at"], r["project_id"]
            )
            for r in records
        ]


@dataclasses.dataclass(frozen=True, slots=True)
class ImportMemory:
    """One memory ready to insert; ``source`` and ``metadata`` are serialised JSON."""

    agent_id: int
    project_id: str
    channel: str
    msg_id: str
    content: str
    source_json: str
    timestamp_text: str
    timestamp_at: datetime | None
    metadata_json: str
    created_at: datetime | None
    locked: bool
    recall_count: int
    last_recalled_at: datetime | None
    embedding: Sequence[float] | None


async def import_memories(
    conn: Connection, tenant_id: TenantId, rows: Sequence[ImportMemory], queue: bool
) -> int:
    """Insert ``rows`` in order, skipping exact-bucket duplicates; the count inserted."""
    with _refusals():
        value = await conn.fetchval(
            QUERIES["import_memories"],
            tenant_id,
            [r.agent_id for r in rows],
            [r.project_id for r in rows],
            [r.channel for r in rows],
            [r.msg_id for r in rows],
            [r.content for r in rows],
            [r.source_json for r in rows],
            [r.timestamp_text for r in rows],
            [r.timestamp_at for r in rows],
            [r.metadata_json for r in rows],
            [r.created_at for r in rows],
            [r.locked for r in rows],
            [r.recall_count for r in rows],
            [r.last_recalled_at for r in rows],
            [_vector(r.embedding) for r in rows],
            queue,
        )
    return int(value)


@dataclasses.dataclass(frozen=True, slots=True)
class ImportEpisode:
    agent_id: int
    project_id: str
    channel: str
    summary: str
    keywords: str
    start_time: str | None
    end_time: str | None
    resolved: bool
    created_at: datetime | None
    embedding: Sequence[float] | None


async def import_episodes(
    conn: Connection, tenant_id: TenantId, rows: Sequence[ImportEpisode], queue: bool
) -> int:
    """Insert ``rows`` in order, skipping known (agent, project, channel, summary)."""
    with _refusals():
        value = await conn.fetchval(
            QUERIES["import_episodes"],
            tenant_id,
            [r.agent_id for r in rows],
            [r.project_id for r in rows],
            [r.channel for r in rows],
            [r.summary for r in rows],
            [r.keywords for r in rows],
            [r.start_time for r in rows],
            [r.end_time for r in rows],
            [r.resolved for r in rows],
            [r.created_at for r in rows],
            [_vector(r.embedding) for r in rows],
            queue,
        )
    return int(value)


@dataclasses.dataclass(frozen=True, slots=True)
class ImportProfile:
    agent_id: int
    user_id: str
    project_id: str
    content: str
    updated_at: datetime | None


async def import_profile(conn: Connection, tenant_id: TenantId, row: ImportProfile) -> None:
    with _refusals():
        await conn.execute(
            QUERIES["import_profile"],
            tenant_id,
            row.agent_id,
            row.user_id,
            row.project_id,
            row.content,
            row.updated_at,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class MergeChunk:
    """One merge step: where it ended (None: nothing left) and what it did."""

    last_id: int | None
    considered: int
    copied: int
    deleted: int
    jobs_dropped: int


@dataclasses.dataclass(frozen=True, slots=True)
class MergeStep:
    source: int
    target: int
    after_id: int
    chunk: int
    move: bool
    queue: bool


def _chunk(record: asyncpg.Record | None) -> MergeChunk:
    assert record is not None
    return MergeChunk(
        record["last_id"],
        record["considered"],
        record["copied"],
        record["deleted"],
        record["jobs_dropped"],
    )


async def merge_memories(conn: Connection, tenant_id: TenantId, step: MergeStep) -> MergeChunk:
    with _refusals():
        record = await conn.fetchrow(
            QUERIES["merge_memories"],
            tenant_id,
            step.source,
            step.target,
            step.after_id,
            step.chunk,
            step.move,
            step.queue,
        )
    return _chunk(record)


async def merge_episodes(conn: Connection, tenant_id: TenantId, step: MergeStep) -> MergeChunk:
    with _refusals():
        record = await conn.fetchrow(
            QUERIES["merge_episodes"],
            tenant_id,
            step.source,
            step.target,
            step.after_id,
            step.chunk,
            step.move,
            step.queue,
        )
    return _chunk(record)


@dataclasses.dataclass(frozen=True, slots=True)
class ProfileMerge:
    considered: int
    copied: int
    deleted: int


async def merge_profiles(
    conn: Connection, tenant_id: TenantId, source: int, target: int, move: bool
) -> ProfileMerge:
    with _refusals():
        record = await conn.fetchrow(QUERIES["merge_profiles"], tenant_id, source, target, move)
    assert record is not None
    return ProfileMerge(record["considered"], record["copied"], record["deleted"])
