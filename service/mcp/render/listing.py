"""list_memories and list_episodes on the wire (docs/tools.md, "list_memories";
docs/tools.md, "list_episodes"): rows newest first, as the library lists them."""

from __future__ import annotations

from typing import Literal

from service.mcp.shaping.listing import Cut
from service.memory.episodes import ListedEpisode
from service.memory.memories.listing import ListedMemory
from service.models import JsonObject


def memory(row: ListedMemory, cut: Cut | None = None) -> JsonObject:
    """One listed memory: whole, or as the list budget ``cut`` it (docs/tools.md, "List
    budgets": ``content`` a pure prefix with ``content_truncated`` and ``content_len``,
    then the ``ref`` that resolves it)."""
    body: JsonObject = {
        "id": row.id,
        "agent_id": row.agent_id,
        "project_id": row.project_id,
        "content": _text(row.content, cut),
        "source": row.source,
        "timestamp": row.timestamp,
        "created_at": row.created_at.isoformat(),
        "locked": row.locked,
        "channel": row.channel,
    }
    return _marked(body, cut, content=row.content)


def episode(row: ListedEpisode, cut: Cut | None = None) -> JsonObject:
    """One listed episode: whole, or as the list budget ``cut`` it (each of ``summary`` and
    ``keywords`` with its own markers, then the ``ref``)."""
    body: JsonObject = {
        "id": row.id,
        "agent_id": row.agent_id,
        "project_id": row.project_id,
        "summary": _text(row.summary, cut),
        "keywords": _text(row.keywords, cut),
        "start_time": row.start_time,
        "end_time": row.end_time,
        "created_at": row.created_at.isoformat(),
    }
    return _marked(body, cut, summary=row.summary, keywords=row.keywords)


def _text(value: str, cut: Cut | None) -> str:
    return value if cut is None else value[: cut.chars]


def _marked(body: JsonObject, cut: Cut | None, **texts: str) -> JsonObject:
    """``body`` with ``<field>_truncated`` and ``<field>_len`` for each text ``cut``
    shortened, in the order given, then the ``ref``."""
    if cut is None:
        return body
    for field, value in texts.items():
        if len(value) > cut.chars:
            body[f"{field}_truncated"] = True
            body[f"{field}_len"] = len(value)
    body["ref"] = cut.ref
    return body


def page(
    key: Literal["memories", "episodes"],
    rows: list[JsonObject],
    trimmed: bool,
    budget_chars: int,
    capped_at: int | None = None,
) -> JsonObject:
    """A list tool's answer ``{<key>: rows, count, budget_chars?, budget_rows?}``:
    ``budget_chars`` only when the list budget trimmed a row, ``budget_rows`` (the row cap)
    only when the cap withheld rows the caller asked for (docs/tools.md, "List budgets")."""
    body: JsonObject = {key: rows, "count": len(rows)}
    if trimmed:
        body["budget_chars"] = budget_chars
    if capped_at is not None:
        body["budget_rows"] = capped_at
    return body
