"""recall_with_context: recall merged with the caller's own conversation
(docs/tools.md, "Merging with the conversation")."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from service.memory import bounds
from service.memory.library import Library
from service.memory.recall.pipeline import RecallRequest, recall
from service.memory.recall.records import Echo, FilterOnly, RecallResult, RecallRow, Speaker
from service.models import TenantId

TURN_NAMES = ("role", "name", "user_id", "timestamp")
"""A turn's short strings (``content`` is bounded like a query)."""
FILTER_NOTE = (
    "entries with these roles were used only to filter recalled memories; they are not "
    "echoed back (only user and assistant turns are)"
)


def check_turns(external: Sequence[object]) -> None:
    """Refuse (InvalidInput) more than ``bounds.LIST_ITEMS`` turns, a turn's content over
    ``bounds.QUERY_CHARS`` or one of its short strings over ``bounds.NAME_CHARS``: the
    library's own copy of the schema's bounds (it trusts no boundary)."""
    bounds.check_list("external_context", external)
    for index, entry in enumerate(external):
        if not isinstance(entry, Mapping):
            continue
        bounds.check_text(
            f"external_context/{index}/content", entry.get("content"), bounds.QUERY_CHARS
        )
        for key in TURN_NAMES:
            bounds.check_text(f"external_context/{index}/{key}", entry.get(key), bounds.NAME_CHARS)


def _entries(external: Sequence[object]) -> list[Mapping[str, Any]]:
    return [entry for entry in external if isinstance(entry, Mapping)]


def exclusions(external: Sequence[object]) -> list[str]:
    """Stripped, lower-cased content of every entry with non-empty string content."""
    return [
        entry["content"].strip().lower()
        for entry in _entries(external)
        if isinstance(entry.get("content"), str) and entry["content"].strip()
    ]


def _echo_source(entry: Mapping[str, Any]) -> Speaker | None:
    role = entry.get("role")
    if role == "assistant":
        return Speaker("Agent", "self")
    if role != "user":
        return None
    name = entry.get("name") if isinstance(entry.get("name"), str) else ""
    user_id = entry.get("user_id") if isinstance(entry.get("user_id"), str) else ""
    return Speaker("User", f"discord:{user_id or name or 'User'}", name or "User")


def echoes(external: Sequence[object]) -> list[Echo]:
    """The user and assistant turns as conversation rows (no ref), in the caller's order."""
    rows: list[Echo] = []
    for entry in _entries(external):
        source = _echo_source(entry)
        content = entry.get("content")
        if source is None or not isinstance(content, str) or not content.strip():
            continue
        stamp = entry.get("timestamp")
        rows.append(Echo(content.strip(), source, stamp if isinstance(stamp, str) else ""))
    return rows


def newest_first(recalled: Sequence[RecallRow], turns: Sequence[Echo]) -> tuple[RecallRow, ...]:
    """Recalled rows (best first) and the turns merged newest first by timestamp.

    The order is exactly the reverse of a stable ascending sort of the recalled rows in
    wire order (best last) followed by the turns: a stable descending sort keeps ties in
    input order, so ties come turns last-to-first, then the recalled rows best first."""
    merged = [*reversed(turns), *recalled]
    merged.sort(key=lambda row: row.timestamp, reverse=True)
    return tuple(merged)


def filter_only_roles(external: Sequence[object]) -> list[str]:
    """Roles (other than user/assistant) of entries that carried content."""
    roles = {
        entry["role"] if isinstance(entry.get("role"), str) else "(unset)"
        for entry in _entries(external)
        if entry.get("role") not in ("user", "assistant")
        and isinstance(entry.get("content"), str)
        and entry["content"].strip()
    }
    return sorted(roles)


async def recall_with_context(
    lib: Library, tenant_id: TenantId, req: RecallRequest, external: Sequence[object]
) -> RecallResult:
    """Recall excluding what the caller already holds, merged with its turns by time;
    InvalidInput for turns over their bounds (``check_turns``) or a request over its own."""
    check_turns(external)
    inner = dataclasses.replace(req, exclude_contents=exclusions(external))
    recalled = await recall(lib, tenant_id, inner)
    roles = filter_only_roles(external)
    return dataclasses.replace(
        recalled,
        rows=newest_first(recalled.rows, echoes(external)),
        context_filter_only=FilterOnly(tuple(roles), FILTER_NOTE) if roles else None,
    )
