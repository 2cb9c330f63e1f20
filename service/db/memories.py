"""Storage of memories: one function per named query of ``sql/memories.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from service.db.pauses import PauseRow
from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.errors import Conflict
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class NewMemory:
    agent_name: str
    project_id: str
    channel: str
    msg_id: str
    content: str
    source: object
    timestamp_text: str
    timestamp_at: datetime | None
    metadata: object
    embedding: Sequence[float] | None = None
    embedding_model: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class StoreResult:
    duplicate_msg_id: int | None
    duplicate_content: int | None
    inserted_id: int | None
    queued: bool = False
    """Whether the inserted row's embedding job was written with it."""
    pause: PauseRow | None = None
    """The persistence pause the write obeyed (nothing was written), when asked to."""


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedJob:
    """The embedding job to write with the row (``store_memory``'s ``job``)."""

    last_error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryListRow:
    id: int
    agent_id: str
    project_id: str
    content: str
    source: object
    timestamp: str
    created_at: datetime
    locked: bool
    channel: str


async def store_memory(
    conn: Connection,
    tenant_id: TenantId,
    row: NewMemory,
    project_scope: Sequence[str],
    channel_scope: Sequence[str],
    job: QueuedJob | None,
    obey_pause_of: str | None = None,
) -> StoreResult:
    """Register the agent if new, probe, insert and (with ``job``) queue the row's
    embedding job: one statement, one round trip. With ``obey_pause_of`` (a session key,
    '' for the tenant-wide pause only) a pause in force writes nothing and is returned."""
    record = await conn.fetchrow(
        QUERIES["store_memory"],
        *arguments(
            "store_memory",
            {
                "tenant_id": tenant_id,
                "agent": row.agent_name,
                "project_id": row.project_id,
                "channel": row.channel,
                "msg_id": row.msg_id,
                "content": row.content,
                "source": row.source,
                "timestamp_text": row.timestamp_text,
                "timestamp_at": row.timestamp_at,
                "metadata": row.metadata,
                "project_scope": list(project_scope),
                "channel_scope": list(channel_scope),
                "embedding": None if row.embedding is None else list(row.embedding),
                "embedding_model": row.embedding_model,
                "queue_job": job is not None,
                "job_error": None if job is None else job.last_error,
                "pause_session": obey_pause_of,
            },
        ),
    )
    assert record is not None
    pause = None
    if record["pause_expires_at"] is not None:
        pause = PauseRow(
            record["pause_session_key"], record["pause_expires_at"], record["pause_remaining"]
        )
    return StoreResult(
        duplicate_msg_id=record["duplicate_msg_id"],
        duplicate_content=record["duplicate_content"],
        inserted_id=record["inserted_id"],
        queued=record["queued"],
        pause=pause,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class DuplicateProbe:
    duplicate_msg_id: int | None
    duplicate_content: int | None


async def probe_memory_duplicate(
    conn: Connection,
    tenant_id: TenantId,
    agent_name: str,
    row: NewMemory,
    project_scope: Sequence[str],
    channel_scope: Sequence[str],
) -> DuplicateProbe:
    record = await conn.fetchrow(
        QUERIES["probe_memory_duplicate"],
        tenant_id,
        agent_name,
        row.msg_id,
        row.content,
        list(project_scope),
        list(channel_scope),
    )
    assert record is not None
    return DuplicateProbe(record["duplicate_msg_id"], record["duplicate_content"])


async def list_memories(
    conn: Connection,
    tenant_id: TenantId,
    agent_name: str | None,
    project_id: str | None,
    limit: int,
) -> list[MemoryListRow]:
    if agent_name is None:
        records = await conn.fetch(QUERIES["list_memories"], tenant_id, project_id, limit)
    else:
        records = await conn.fetch(
            QUERIES["list_agent_memories"], tenant_id, agent_name, project_id, limit
        )
    return memory_rows(records)


def memory_rows(records: list[Any]) -> list[MemoryListRow]:
    """Listing rows as the list statements return them."""
    return [
        MemoryListRow(
            id=r["id"],
            agent_id=r["agent_id"],
            project_id=r["project_id"],
            content=r["content"],
            source=r["source"],
            timestamp=r["timestamp_text"],
            created_at=r["created_at"],
            locked=r["locked"],
            channel=r["channel"],
        )
        for r in records
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class EditTarget:
    id: int
    agent_name: str
    locked: bool


async def memory_for_edit(
    conn: Connection, tenant_id: TenantId, memory_id: int
) -> EditTarget | None:
    record = await conn.fetchrow(QUERIES["memory_for_edit"], tenant_id, memory_id)
    if record is None:
        return None
    return EditTarget(id=record["id"], agent_name=record["agent_name"], locked=record["locked"])


async def update_memory_content(
    conn: Connection,
    tenant_id: TenantId,
    memory_id: int,
    content: str,
    embedding: Sequence[float] | None = None,
    embedding_model: str | None = None,
) -> bool:
    """True when the row was updated (False: it was locked meanwhile).

    The embedding is replaced too (NULL when the new content has none yet).
    Raises Conflict naming the unique index when the new content duplicates
    another row of the same agent, project and channel.
    """
    vector = None if embedding is None else list(embedding)
    try:
        value = await conn.fetchval(
            QUERIES["update_memory_content"], tenant_id, memory_id, content, vector, embedding_model
        )
    except asyncpg.UniqueViolationError as exc:
        raise Conflict(exc.constraint_name or "unique constraint") from exc
    return value is not None


async def set_memory_lock(
    conn: Connection, tenant_id: TenantId, memory_id: int, locked: bool
) -> bool:
    value = await conn.fetchval(QUERIES["set_memory_lock"], tenant_id, memory_id, locked)
    return value is not None


async def delete_unlocked_memory(
    conn: Connection, tenant_id: TenantId, memory_id: int, agent_name: str | None
) -> bool:
    value = await conn.fetchval(QUERIES["delete_unlocked_memory"], tenant_id, memory_id, agent_name)
    return value is not None


async def delete_agent_memories(conn: Connection, tenant_id: TenantId, agent_id: int) -> int:
    return int(await conn.fetchval(QUERIES["delete_agent_memories"], tenant_id, agent_id))
