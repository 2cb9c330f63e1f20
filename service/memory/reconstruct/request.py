"""What a reconstruct is asked, its defaults and bounds (docs/tools.md, "reconstruct")."""

from __future__ import annotations

import dataclasses
from typing import Final, Literal, TypeAlias

from service.memory import bounds
from service.memory.recall.cue import TimeCue
from service.memory.recall.request import check_names

Mode: TypeAlias = Literal["lite", "pro"]

DEFAULT_COUNT: Final = 10
"""Items a reconstruct returns when the caller names no ``count``
(``CPERSONA_RECONSTRUCT_DEFAULT_COUNT``'s default; the operator's values come from the
settings, these are ``resolve_count``'s defaults)."""
MAX_COUNT: Final = 10
"""Most window items: a larger ``count`` is clamped and the clamp reported."""
PRO_COUNT: Final = 15
"""``mode: pro``'s default and maximum window."""
MAX_TOP_K: Final = 100
MAX_HOPS: Final = 5
"""The walk's deepest reach, as traverse's (the library lowers a larger request)."""
MAX_EVIDENCE: Final = 100
"""Most claims an item keeps, and the walk's per-entity read bound less one."""


@dataclasses.dataclass(frozen=True, slots=True)
class ReconstructRequest:
    """One reconstruct's arguments, as the tool passes them. ``count``, ``top_k``,
    ``max_hops`` and ``max_evidence`` are None when the caller named none; the scope
    fields have recall's semantics (project None = all projects); ``paused`` says a
    persistence pause holds, so the candidate recall credits no statistics."""

    agent_id: str
    query: str
    mode: Mode | None = None
    count: int | None = None
    top_k: int | None = None
    max_hops: int | None = None
    max_evidence: int | None = None
    deep: bool = False
    channel: str = ""
    project_id: str | None = None
    source_id: str = ""
    trace: bool = False
    paused: bool = False
    time_cue: TimeCue | None = None
    """Applied to the candidate recall (docs/tools.md, "Time cues")."""


def check_request(req: ReconstructRequest) -> None:
    """Refuse (InvalidInput) a request over its documented bounds: the query at
    ``bounds.QUERY_CHARS``, the names at ``bounds.IDENTIFIER_CHARS`` (the candidate recall
    checks them again). Numbers out of range are not refused but brought into range and
    reported (``bounds`` of the answer), as CPersona does."""
    bounds.check_text("query", req.query, bounds.QUERY_CHARS)
    check_names(req.agent_id, req.project_id, req.channel, req.source_id)
