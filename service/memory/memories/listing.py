"""Listings: newest-first views of a tenant's memories (full rows, no budgets)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Generic, TypeVar

from service.db import memories, supersession as chains
from service.errors import InvalidInput
from service.memory import supersession
from service.memory.library import Library
from service.models import JsonObject, TenantId

LIST_MEMORIES_MAX = 500
R = TypeVar("R")


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def capped(limit: int, cap: int) -> tuple[int, int]:
    """``(wanted, read)`` for a listing asked for ``limit`` rows under the row cap ``cap``:
    ``wanted`` is the clamped count; one row more is read only when the caller asked for
    more than the cap, to learn whether the cap withheld any (:class:`Listing`)."""
    wanted = clamp(limit, 0, cap)
    return wanted, wanted + 1 if limit > cap else wanted


@dataclasses.dataclass(frozen=True, slots=True)
class Listing(Generic[R]):
    """A page of a listing, newest first. ``capped_at`` is the row cap when it withheld rows
    the caller asked for (CPersona 2.6's ``budget_rows``: a listing cut by the cap no longer
    looks like one that reached the end of the data), else None."""

    rows: list[R]
    capped_at: int | None = None


def page_of(rows: list[R], wanted: int, cap: int) -> Listing[R]:
    """The first ``wanted`` of ``rows`` (read by :func:`capped`), marked when more were there."""
    return Listing(rows[:wanted], cap if len(rows) > wanted else None)


@dataclasses.dataclass(frozen=True, slots=True)
class ListedMemory:
    """One memory of a listing, whole: ``source`` is ``{}`` when none."""

    id: int
    agent_id: str
    project_id: str
    content: str
    source: JsonObject
    timestamp: str
    created_at: datetime
    locked: bool
    channel: str


def _memory_row(row: memories.MemoryListRow) -> ListedMemory:
    return ListedMemory(
        id=row.id,
        agent_id=row.agent_id,
        project_id=row.project_id,
        content=row.content,
        source=row.source if isinstance(row.source, dict) else {},
        timestamp=row.timestamp,
        created_at=row.created_at,
        locked=row.locked,
        channel=row.channel,
    )


async def list_memories(
    lib: Library,
    tenant_id: TenantId,
    *,
    agent_id: str | None,
    project_id: str | None,
    limit: int,
    as_of: str = "",
    current_only: bool = False,
) -> Listing[ListedMemory]:
    """Newest-first memories of the tenant (docs/tools.md, "list_memories";
    docs/tools.md, "Isolation axes").

    ``agent_id`` None or empty lists every agent *of this tenant*; ``limit`` is
    clamped to 0..500 as in CPersona (``capped_at`` says when that withheld rows).
    ``as_of`` / ``current_only`` read one agent's memories as the supersession model does
    (docs/tools.md, "Facts that change").
    """
    wanted, read = capped(limit, LIST_MEMORIES_MAX)
    if wanted == 0:
        if as_of or current_only:
            _as_of_agent(agent_id)
        return Listing([])
    if as_of or current_only:
        kept = await _read_as_of(
            lib, tenant_id, (agent_id or "", project_id, read), as_of, current_only
        )
        return page_of(kept, wanted, LIST_MEMORIES_MAX)
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await memories.list_memories(conn, tenant_id, agent_id or None, project_id, read)
    return page_of([_memory_row(row) for row in rows], wanted, LIST_MEMORIES_MAX)


def _as_of_agent(agent: str | None) -> None:
    """``as_of`` and ``current_only`` read one agent (supersession is per agent)."""
    if not agent:
        raise InvalidInput("as_of and current_only need an agent_id (supersession is per agent)")


async def _read_as_of(
    lib: Library,
    tenant_id: TenantId,
    where: tuple[str, str | None, int],
    as_of: str,
    current_only: bool,
) -> list[ListedMemory]:
    """The listing read ``as_of`` / ``current_only``: the statement applies the model to
    memories and their memory successors; a memory superseded by an episode is judged
    here, on the episode's parsed start (one batched lookup)."""
    agent, project_id, limit = where
    _as_of_agent(agent)
    moment = supersession.parse_as_of(as_of) if as_of else None
    if limit == 0:
        return []
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await chains.list_agent_memories_as_of(
            conn, tenant_id, agent, project_id, limit, (moment, current_only)
        )
        refs = [("mem", row.id) for row in rows]
        facts = await supersession.read_facts(conn, tenant_id, agent, refs, always=False)
    kept = [r for r in rows if supersession.kept(facts.get(("mem", r.id)), moment, current_only)]
    return [_memory_row(row) for row in kept]
