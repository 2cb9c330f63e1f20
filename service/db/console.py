"""Storage of web console sessions: one function per query of ``sql/console.sql``.

Control plane (admin connections, like API keys and OAuth tokens): a presented session
id is looked up by its hash before the tenant is known, and the lookup checks the key it
was opened from (``cpersona_app`` cannot read ``api_keys``).
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES


@dataclasses.dataclass(frozen=True, slots=True)
class SessionKeyRow:
    """The key behind a live session: what the caller is made of."""

    prefix: str
    label: str
    grants: dict[str, str]
    tool_set: str
    tenant_id: uuid.UUID
    tenant_slug: str


async def insert_console_session(
    conn: Connection,
    tenant_id: uuid.UUID,
    session_hash: bytes,
    key_prefix: str,
    idle_seconds: int,
    lifetime_seconds: float,
) -> None:
    await conn.execute(
        QUERIES["insert_console_session"],
        tenant_id,
        session_hash,
        key_prefix,
        idle_seconds,
        lifetime_seconds,
    )


async def console_session_for_auth(conn: Connection, session_hash: bytes) -> SessionKeyRow | None:
    record = await conn.fetchrow(QUERIES["console_session_for_auth"], session_hash)
    if record is None:
        return None
    return SessionKeyRow(
        prefix=record["prefix"],
        label=record["label"],
        grants=dict(record["grants"]),
        tool_set=record["tool_set"],
        tenant_id=record["tenant_id"],
        tenant_slug=record["tenant_slug"],
    )


async def delete_console_session(conn: Connection, session_hash: bytes) -> None:
    await conn.execute(QUERIES["delete_console_session"], session_hash)


async def delete_ended_console_sessions(conn: Connection) -> None:
    await conn.execute(QUERIES["delete_ended_console_sessions"])


@dataclasses.dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent of the console's agents page, with its counts."""

    name: str
    memories: int
    episodes: int
    locked: int
    pending_embeddings: int
    last_write: datetime | None
    last_recall: datetime | None


async def console_agents(
    conn: Connection,
    tenant_id: uuid.UUID,
    after: str,
    readable_by_default: bool,
    hidden: list[str],
    granted: list[str],
    page_size: int,
) -> list[AgentRow]:
    records = await conn.fetch(
        QUERIES["console_agents"],
        tenant_id,
        after,
        readable_by_default,
        hidden,
        granted,
        page_size,
    )
    return [AgentRow(**dict(record)) for record in records]


@dataclasses.dataclass(frozen=True, slots=True)
class RecordRow:
    """One memory or episode of a console list: the start of its text and its facts."""

    id: int
    preview: str
    chars: int
    project_id: str
    channel: str
    source: dict[str, object]
    timestamp_text: str
    created_at: datetime
    locked: bool
    embedded: bool


@dataclasses.dataclass(frozen=True, slots=True)
class RecordsQuery:
    """The arguments of console_memories and console_episodes, in their ``$n`` order."""

    tenant_id: uuid.UUID
    agent: str
    before_at: datetime
    before_id: int
    preview_chars: int
    page_size: int


def _record_rows(records: list[Any]) -> list[RecordRow]:
    return [RecordRow(**{**dict(record), "source": dict(record["source"])}) for record in records]


async def console_memories(conn: Connection, query: RecordsQuery) -> list[RecordRow]:
    records = await conn.fetch(QUERIES["console_memories"], *dataclasses.astuple(query))
    return _record_rows(records)


async def console_episodes(conn: Connection, query: RecordsQuery) -> list[RecordRow]:
    records = await conn.fetch(QUERIES["console_episodes"], *dataclasses.astuple(query))
    return _record_rows(records)


@dataclasses.dataclass(frozen=True, slots=True)
class RecordDetail:
    """One memory or episode, whole, for the record page."""

    id: int
    text: str
    project_id: str
    channel: str
    msg_id: str
    source: dict[str, Any]
    metadata: dict[str, Any]
    timestamp_text: str
    created_at: datetime
    updated_at: datetime
    locked: bool
    recall_count: int
    last_recalled_at: datetime | None
    embedded: bool
    embedding_model: str | None
    queued: bool


def _detail(record: Any) -> RecordDetail | None:
    if record is None:
        return None
    values = dict(record)
    return RecordDetail(
        **{**values, "source": dict(values["source"]), "metadata": dict(values["metadata"])}
    )


async def console_memory(
    conn: Connection, tenant_id: uuid.UUID, agent: str, memory_id: int
) -> RecordDetail | None:
    return _detail(await conn.fetchrow(QUERIES["console_memory"], tenant_id, agent, memory_id))


async def console_episode(
    conn: Connection, tenant_id: uuid.UUID, agent: str, episode_id: int
) -> RecordDetail | None:
    return _detail(await conn.fetchrow(QUERIES["console_episode"], tenant_id, agent, episode_id))
