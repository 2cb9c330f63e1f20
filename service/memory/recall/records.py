"""What recall answers, as typed records (docs/architecture.md, "The read family's seam").

The library hands the boundary these records, never wire dicts: rows **best first** (the
best match of ``recall``, the newest row of ``recall_with_context``) and the envelope
facts beside them. Only ``service.mcp.render.recall`` spells wire keys and wire order
(ascending, best last), so the rows are reversed exactly once, when they are rendered.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Literal, TypeAlias

from service.db.recall import PassageMatch
from service.memory.recall.candidate import HeldReason, Kind, MatchReason
from service.memory.recall.confidence import Confidence
from service.memory.supersession import Fact
from service.models import JsonObject

Severity: TypeAlias = Literal["hint", "fault"]


@dataclasses.dataclass(frozen=True, slots=True)
class Recalled:
    """A ranked memory, episode or the profile row, with full content.

    ``ref`` is ``mem:<id>`` / ``ep:<id>`` (None for the profile row); ``source`` is the
    stored free-form document (``{}`` when none); ``timestamp`` and ``msg_id`` are ``""``
    when the row has none; ``confidence`` is set only with confidence scoring on, and
    ``match_reason`` only for a scored row, or a held row's ``HeldReason``; ``fact`` only
    for a row in a supersession chain (docs/tools.md, "Facts that change"); ``passage``
    the record's passage that matched the query best by meaning, when the vector channel
    scored one (docs/architecture.md, "Passages"; the boundary's excerpt may show it)."""

    kind: Kind
    id: int
    ref: str | None
    content: str
    source: JsonObject
    timestamp: str
    msg_id: str
    confidence: Confidence | None
    match_reason: MatchReason | HeldReason | None
    fact: Fact | None = None
    passage: PassageMatch | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Speaker:
    """Who said a conversation turn: the agent itself, or a user (``id`` and ``name``)."""

    type: Literal["User", "Agent"]
    id: str
    name: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Echo:
    """A user or assistant turn of ``external_context``, echoed back (no ref)."""

    content: str
    source: Speaker
    timestamp: str


RecallRow: TypeAlias = Recalled | Echo


@dataclasses.dataclass(frozen=True, slots=True)
class Advisory:
    """The degraded-recall advisory (docs/tools.md, "Degraded advisory")."""

    severity: Severity
    reason: str
    evidence: str
    runbook: str


@dataclasses.dataclass(frozen=True, slots=True)
class FilterOnly:
    """Roles of turns used only to filter recalled memories (recall_with_context)."""

    roles: tuple[str, ...]
    note: str


@dataclasses.dataclass(frozen=True, slots=True)
class CueApplied:
    """What a time cue did (docs/tools.md, "Time cues"): the period its last stage
    searched (None: the cue needed the scope's span and the scope had none), the final
    confidence, whether the period was widened, how many returned rows changed place,
    how many seats it filled."""

    period: tuple[datetime, datetime] | None
    confidence: Literal["sure", "likely", "vague"]
    revised: bool
    moved: int = 0
    seated: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class CueIgnored:
    """A time cue that was not used: its own period starts within the last 24 hours."""

    period: tuple[datetime, datetime]
    reason: Literal["recent_only"] = "recent_only"


CueReport: TypeAlias = CueApplied | CueIgnored


@dataclasses.dataclass(frozen=True, slots=True)
class RecallResult:
    """One recall's answer: ``rows`` best first (held rows last), and the envelope facts."""

    rows: tuple[RecallRow, ...]
    gate_fallback: bool = False
    advisory: Advisory | None = None
    context_filter_only: FilterOnly | None = None
    time_cue: CueReport | None = None
