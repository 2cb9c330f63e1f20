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
    extra_lexical_terms: Sequence[str] = ()
    as_of: str = ""
    """docs/tools.md, "Facts that change": '' = now; else an ISO 8601 date or time."""
    current_only: bool = False
    time_cue: TimeCue | None = None


MAX_EXTRA_TERMS = 32
"""Most extra lexical terms one recall takes (reconstruct's query expansion hands over
at most this many, docs/tools.md, "reconstruct")."""


def check_request(req: RecallRequest) -> None:
    """Refuse (InvalidInput) a request over its documented bounds: the query and each
    excluded text at ``bounds.QUERY_CHARS``, at most ``bounds.LIST_ITEMS`` exclusions, the
    names at ``bounds.IDENTIFIER_CHARS``, at most ``MAX_EXTRA_TERMS`` extra lexical terms
    of ``bounds.NAME_CHARS`` each. The schema says the same; the library checks it
    again because it trusts no boundary, and an unbounded query costs every tenant (full
    text, the LIKE fallback and the embedder all scale with it)."""
    bounds.check_text("query", req.query, bounds.QUERY_CHARS)
    bounds.check_texts("exclude_contents", req.exclude_contents, bounds.QUERY_CHARS)
    bounds.check_list("extra_lexical_terms", req.extra_lexical_terms, MAX_EXTRA_TERMS)
    for index, term in enumerate(req.extra_lexical_terms):
        bounds.check_text(f"extra_lexical_terms/{index}", term, bounds.NAME_CHARS)
    check_names(req.agent_id, req.project_id, req.channel, req.source_id)


def check_names(agent_id: str, project_id: str | None, channel: str, source_id: str) -> None:
    """Refuse (InvalidInput) a read's agent or scope name over ``bounds.IDENTIFIER_CHARS``
    (recall's and reconstruct's)."""
    for field, value in (
        ("agent_id", agent_id),
        ("project_id", project_id),
        ("channel", channel),
        ("source_id", source_id),
    ):
        bounds.check_text(field, value, bounds.IDENTIFIER_CHARS)
