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
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Literal, TypeVar

import asyncpg
from pgvector import Vector

from service.db import episodes
from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
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


Exported = TypeVar("Exported", "ExportMemory", "ExportEpisode", "ExportProfile")


def _from_record(kind: type[Exported], record: asyncpg.Record) -> Exported:
    """An export row from a record whose columns are named like the row's fields."""
    values = {field.name: record[field.name] for field in dataclasses.fields(kind)}
    if "embedding" in values:
        values["embedding"] = _floats(values["embedding"])
    return kind(**values)


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


@dataclasses.dataclass(frozen=True, slots=True)
class ExportProfile:
    agent_name: str
    user_id: str
    content: str
    updated_at: datetime
    project_id: str


async def export_batches(
    conn: Connection,
    kind: type[Exported],
    tenant_id: TenantId,
    agent_id: int | None,
    embeddings: bool,
    batch: int,
) -> AsyncIterator[list[Exported]]:
    """The tenant's rows of one kind (memories and episodes in id order, profiles by owner),
    ``batch`` at a time from a server cursor, so it needs an open transaction."""
    if kind is ExportProfile:
        cursor = await conn.cursor(QUERIES["export_profiles"], tenant_id, agent_id)
    else:
        query = QUERIES["export_memories"] if kind is ExportMemory else QUERIES["export_episodes"]
        cursor = await conn.cursor(query, tenant_id, agent_id, embeddings)
    while records := await cursor.fetch(batch):
        yield [_from_record(kind, r) for r in records]


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
    embedding_model: str | None = None
    """The model of ``embedding`` when it is known to be the configured one."""


MEMORY_COLUMNS = {
    "agent_id": "agent_id",
    "project_id": "project_id",
    "channel": "channel",
    "msg_id": "msg_id",
    "content": "content",
    "source": "source_json",
    "timestamp_text": "timestamp_text",
    "timestamp_at": "timestamp_at",
    "metadata": "metadata_json",
    "created_at": "created_at",
    "locked": "locked",
    "recall_count": "recall_count",
    "last_recalled_at": "last_recalled_at",
    "embedding_model": "embedding_model",
}
"""The column arrays of ``import_memories``: parameter name -> the row's attribute."""
EPISODE_COLUMNS = {
    name: name
    for name in (
        "agent_id",
        "project_id",
        "channel",
        "summary",
        "keywords",
        "start_time",
        "end_time",
        "resolved",
        "created_at",
        "embedding_model",
    )
}
"""The column arrays of ``import_episodes``: parameter name -> the row's attribute."""


async def _insert_rows(
    conn: Connection,
    query: tuple[str, str],
    tenant_id: TenantId,
    rows: Sequence[ImportMemory] | Sequence[ImportEpisode],
    columns: Mapping[str, str],
    queue: bool,
) -> int:
    """Run an ``unnest``-based import statement, ``query`` (its name and statement): one
    array per parameter of ``columns`` (read from the row attribute it names), the
    vectors, and whether to queue rows without a vector of the configured model; the
    count inserted."""
    name, statement = query
    values: dict[str, object] = {
        parameter: [getattr(row, attribute) for row in rows]
        for parameter, attribute in columns.items()
    }
    values.update(tenant_id=tenant_id, embedding=[_vector(r.embedding) for r in rows], queue=queue)
    with _refusals():
        value = await conn.fetchval(statement, *arguments(name, values))
    return int(value)


async def import_memories(
    conn: Connection, tenant_id: TenantId, rows: Sequence[ImportMemory], queue: bool
) -> int:
    """Insert ``rows`` in order, skipping exact-bucket duplicates; the count inserted."""
    return await _insert_rows(
        conn,
        ("import_memories", QUERIES["import_memories"]),
        tenant_id,
        rows,
        MEMORY_COLUMNS,
        queue,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ImportEpisode(episodes.NewEpisode):
    """An episode as an import writes it: a new episode with its original creation time."""

    created_at: datetime | None = None


async def import_episodes(
    conn: Connection, tenant_id: TenantId, rows: Sequence[ImportEpisode], queue: bool
) -> int:
    """Insert ``rows`` in order, skipping known (agent, project, channel, summary)."""
    return await _insert_rows(
        conn,
        ("import_episodes", QUERIES["import_episodes"]),
        tenant_id,
        rows,
        EPISODE_COLUMNS,
        queue,
    )


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


async def merge_chunk(
    conn: Connection, tenant_id: TenantId, kind: Literal["mem", "ep"], step: MergeStep
) -> MergeChunk:
    """Copy (or move) one chunk of the source's memories or episodes into the target."""
    query = QUERIES["merge_memories"] if kind == "mem" else QUERIES["merge_episodes"]
    with _refusals():
        record = await conn.fetchrow(
            query,
            tenant_id,
            step.source,
            step.target,
            step.after_id,
            step.chunk,
            step.move,
            step.queue,
        )
    assert record is not None
    return MergeChunk(
        record["last_id"],
        record["considered"],
        record["copied"],
        record["deleted"],
        record["jobs_dropped"],
    )


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
