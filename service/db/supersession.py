"""Storage of supersession (docs/tools.md, "Facts that change"): one function per named
query of ``sql/supersession.sql``. A supersession is a ``relations`` row with predicate
``supersedes`` whose both ends are records; its subject is the newer record."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db import memories
from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId

Ref = tuple[str, int]
"""A record: its kind ('mem' or 'ep') and id."""


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """One supersession: relation ``id``, ``newer`` supersedes ``older``."""

    id: int
    newer: Ref
    older: Ref
    declared_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class Times:
    """What a record's valid_from is made of (``service.memory.supersession.valid_from``)."""

    ref: Ref
    at: datetime | None
    start_time: str | None
    created_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class Neighbour:
    """A supersession naming a record about to be deleted, with its scope."""

    link: Link
    agent_id: int
    project_id: str
    channel: str


def _link(row: Any) -> Link:
    return Link(
        int(row["id"]),
        (str(row["subject_kind"]), int(row["subject_id"])),
        (str(row["object_kind"]), int(row["object_id"])),
        row["declared_at"],
    )


def _times(row: Any) -> Times:
    return Times(
        (str(row["kind"]), int(row["id"])), row["at"], row["start_time"], row["created_at"]
    )


def _ids(refs: Sequence[Ref], kind: str) -> list[int]:
    return [row_id for k, row_id in refs if k == kind]


async def successor_of(conn: Connection, tenant_id: TenantId, older: Ref) -> tuple[int, Ref] | None:
    row = await conn.fetchrow(QUERIES["successor_of"], tenant_id, *older)
    if row is None:
        return None
    return int(row["id"]), (str(row["subject_kind"]), int(row["subject_id"]))


async def reaches_by_successors(
    conn: Connection, tenant_id: TenantId, start: Ref, goal: Ref, max_steps: int
) -> tuple[bool, bool]:
    """(whether ``goal`` is a successor, direct or not, of ``start``; whether the walk was
    cut at ``max_steps``)."""
    row = await conn.fetchrow(QUERIES["reaches_by_successors"], tenant_id, *start, *goal, max_steps)
    assert row is not None  # an aggregate always answers
    return bool(row["reaches"]), bool(row["cut"])


async def links_of(
    conn: Connection, tenant_id: TenantId, agent: str, refs: Sequence[Ref]
) -> list[Link]:
    rows = await conn.fetch(
        QUERIES["links_of"], tenant_id, agent, _ids(refs, "mem"), _ids(refs, "ep")
    )
    return [_link(row) for row in rows]


async def agent_links(conn: Connection, tenant_id: TenantId, agent: str, limit: int) -> list[Link]:
    return [_link(row) for row in await conn.fetch(QUERIES["agent_links"], tenant_id, agent, limit)]


async def linked_agents(conn: Connection, tenant_id: TenantId) -> list[tuple[int, str]]:
    rows = await conn.fetch(QUERIES["linked_agents"], tenant_id)
    return [(int(row["agent_id"]), str(row["name"])) for row in rows]


async def record_times(
    conn: Connection, tenant_id: TenantId, agent: str, refs: Sequence[Ref]
) -> list[Times]:
    rows = await conn.fetch(
        QUERIES["record_times"], tenant_id, agent, _ids(refs, "mem"), _ids(refs, "ep")
    )
    return [_times(row) for row in rows]


async def agent_records(
    conn: Connection, tenant_id: TenantId, agent: str, limit: int
) -> list[Times]:
    return [
        _times(row) for row in await conn.fetch(QUERIES["agent_records"], tenant_id, agent, limit)
    ]


async def insert_supersession(
    conn: Connection, tenant_id: TenantId, where: Neighbour, newer: Ref, older: Ref
) -> int | None:
    """The new relation's id, or None when ``older`` already has a successor."""
    value = await conn.fetchval(
        QUERIES["insert_supersession"],
        tenant_id,
        where.agent_id,
        where.project_id,
        *newer,
        *older,
        where.channel,
    )
    return None if value is None else int(value)


async def supersession_neighbours(
    conn: Connection, tenant_id: TenantId, ref: Ref
) -> list[Neighbour]:
    rows = await conn.fetch(QUERIES["supersession_neighbours"], tenant_id, *ref)
    return [
        Neighbour(_link(row), int(row["agent_id"]), str(row["project_id"]), str(row["channel"]))
        for row in rows
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryBase:
    """The memory update_memory(keep_history) replaces: its agent, scope, source, metadata."""

    agent_id: int
    project_id: str
    channel: str
    source: object
    metadata: object


async def memory_for_history(
    conn: Connection, tenant_id: TenantId, memory_id: int
) -> HistoryBase | None:
    row = await conn.fetchrow(QUERIES["memory_for_history"], tenant_id, memory_id)
    if row is None:
        return None
    return HistoryBase(
        int(row["agent_id"]), row["project_id"], row["channel"], row["source"], row["metadata"]
    )


async def list_agent_memories_as_of(
    conn: Connection,
    tenant_id: TenantId,
    agent: str,
    project_id: str | None,
    limit: int,
    reading: tuple[datetime | None, bool],
) -> list[memories.MemoryListRow]:
    """``reading``: (as_of, current_only)."""
    records = await conn.fetch(
        QUERIES["list_agent_memories_as_of"], tenant_id, agent, project_id, limit, *reading
    )
    return memories.memory_rows(list(records))
