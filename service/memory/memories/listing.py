"""Listings: newest-first views of a tenant's memories (full rows, no budgets)."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from service.db import memories
from service.memory.library import Library
from service.models import JsonObject, TenantId

LIST_MEMORIES_MAX = 500


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


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
) -> list[ListedMemory]:
    """Newest-first memories of the tenant (docs/tools.md, "list_memories";
    docs/tools.md, "Isolation axes").

    ``agent_id`` None or empty lists every agent *of this tenant*; ``limit`` is
    clamped to 0..500 as in CPersona.
    """
    limit = clamp(limit, 0, LIST_MEMORIES_MAX)
    if limit == 0:
        return []
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await memories.list_memories(conn, tenant_id, agent_id or None, project_id, limit)
    return [_memory_row(row) for row in rows]
