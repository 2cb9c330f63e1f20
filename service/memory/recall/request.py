"""What a recall is asked: the library's request of both recall tools."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.memory import bounds
from service.memory.recall.cue import TimeCue

DEFAULT_LIMIT = 10
"""Rows a recall returns when the caller names no ``limit`` (docs/tools.md, "Tool reference")."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall's arguments as the tools pass them (defaults as in their schemas);
    ``paused`` says a persistence pause holds, so no recall statistics are credited;
    ``time_cue`` is the read cue (``cue.parse``; docs/tools.md, "Time cues"), None for none."""

    agent_id: str
    query: str
    limit: int = DEFAULT_LIMIT
    deep: bool = False
    channel: str = ""
    exclude_contents: Sequence[object] = ()
    project_id: str | None = None
    source_id: str = ""
    paused: bool = False
    time_cue: TimeCue | None = None


def check_request(req: RecallRequest) -> None:
    """Refuse (InvalidInput) a request over its documented bounds: the query and each
    excluded text at ``bounds.QUERY_CHARS``, at most ``bounds.LIST_ITEMS`` exclusions, the
    names at ``bounds.IDENTIFIER_CHARS``. The schema says the same; the library checks it
    again because it trusts no boundary, and an unbounded query costs every tenant (full
    text, the LIKE fallback and the embedder all scale with it)."""
    bounds.check_text("query", req.query, bounds.QUERY_CHARS)
    bounds.check_texts("exclude_contents", req.exclude_contents, bounds.QUERY_CHARS)
    for field, value in (
        ("agent_id", req.agent_id),
        ("project_id", req.project_id),
        ("channel", req.channel),
        ("source_id", req.source_id),
    ):
        bounds.check_text(field, value, bounds.IDENTIFIER_CHARS)
