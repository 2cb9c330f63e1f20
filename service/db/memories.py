"""Storage of memories: one function per named query of ``sql/memories.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class NewMemory:
    agent_id: int
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
) -> StoreResult:
    record = await conn.fetchrow(
        QUERIES["store_memory"],
        tenant_id,
        row.agent_id,
        row.project_id,
        row.channel,
        row.msg_id,
        row.content,
        row.source,
        row.timestamp_text,
        row.timestamp_at,
        row.metadata,
        list(project_scope),
        list(channel_scope),
        None if row.embedding is None else list(row.embedding),
        row.embedding_model,
    )
    assert record is not None
    return StoreResult(
        duplicate_msg_id=record["duplicate_msg_id"],
        duplicate_content=record["duplicate_content"],
        inserted_id=record["inserted_id"],
    )


async def list_memories(
    conn: Connection,
    tenant_id: TenantId,
    agent_name: str | None,
    project_id: str | None,
    limit: int,
) -> list[MemoryListRow]:
    records = await conn.fetch(QUERIES["list_memories"], tenant_id, agent_name, project_id, limit)
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
