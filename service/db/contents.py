"""Storage of get_contents: one function for the named query of ``sql/contents.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryContent:
    """A whole memory row as get_contents returns it (``msg_id`` ``""`` when none)."""

    id: int
    content: str
    source: object
    timestamp_text: str
    msg_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class EpisodeContent:
    """A whole episode row as get_contents returns it."""

    id: int
    summary: str
    start_time: str | None
    created_at: datetime
    resolved: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Contents:
    """The rows found, keyed by id, one map per kind (ids never cross kinds)."""

    memories: dict[int, MemoryContent]
    episodes: dict[int, EpisodeContent]


async def get_contents(
    conn: Connection,
    tenant_id: TenantId,
    agent_name: str,
    memory_ids: Collection[int],
    episode_ids: Collection[int],
) -> Contents:
    """The memories and episodes with these ids owned by ``agent_name``, in one statement.

    Ids that are absent, of another agent or (by RLS and the filter) of another tenant are
    simply not in the result.
    """
    records = await conn.fetch(
        QUERIES["get_contents"], tenant_id, agent_name, list(memory_ids), list(episode_ids)
    )
    found = Contents(memories={}, episodes={})
    for r in records:
        if r["kind"] == "mem":
            found.memories[r["id"]] = MemoryContent(
                id=r["id"],
                content=r["body"],
                source=r["source"],
                timestamp_text=r["timestamp_text"],
                msg_id=r["msg_id"],
            )
        else:
            found.episodes[r["id"]] = EpisodeContent(
                id=r["id"],
                summary=r["body"],
                start_time=r["start_time"],
                created_at=r["created_at"],
                resolved=r["resolved"],
            )
    return found


async def passage_spans(
    conn: Connection,
    tenant_id: TenantId,
    memory_ids: Collection[int],
    episode_ids: Collection[int],
) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The ``[start, end)`` of every current passage of these records, in text order, by
    ``(kind, id)``; a record without current passages is absent."""
    records = await conn.fetch(
        QUERIES["passage_spans"], tenant_id, list(memory_ids), list(episode_ids)
    )
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in records:
        found.setdefault((r["kind"], r["id"]), []).append((r["start_char"], r["end_char"]))
    return found
