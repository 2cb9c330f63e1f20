"""list_memories and list_episodes on the wire (docs/tools.md, "list_memories";
docs/tools.md, "list_episodes"): rows newest first, as the library lists them."""

from __future__ import annotations

from typing import Literal

from service.memory.episodes import ListedEpisode
from service.memory.memories.listing import ListedMemory
from service.models import JsonObject


def memory(row: ListedMemory) -> JsonObject:
    """One listed memory, whole (the list budget may trim it afterwards)."""
    return {
        "id": row.id,
        "agent_id": row.agent_id,
        "project_id": row.project_id,
        "content": row.content,
        "source": row.source,
        "timestamp": row.timestamp,
        "created_at": row.created_at.isoformat(),
        "locked": row.locked,
        "channel": row.channel,
    }


def episode(row: ListedEpisode) -> JsonObject:
    """One listed episode, whole (the list budget may trim it afterwards)."""
    return {
        "id": row.id,
        "agent_id": row.agent_id,
        "project_id": row.project_id,
        "summary": row.summary,
        "keywords": row.keywords,
        "start_time": row.start_time,
        "end_time": row.end_time,
        "created_at": row.created_at.isoformat(),
    }


def page(
    key: Literal["memories", "episodes"],
    rows: list[JsonObject],
    trimmed: bool,
    budget_chars: int,
) -> JsonObject:
    """A list tool's answer ``{<key>: rows, count, budget_chars?}``: ``budget_chars`` only
    when the list budget trimmed a row (docs/tools.md, "List budgets")."""
    body: JsonObject = {key: rows, "count": len(rows)}
    if trimmed:
        body["budget_chars"] = budget_chars
    return body
