"""Typed recall rows for the shaping unit tests, and their compact wire form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.mcp.render import recall as render_recall
from service.mcp.shaping.rows import RecallRow, Shaped
from service.memory.recall.candidate import MatchReason
from service.memory.recall.confidence import Confidence
from service.memory.recall.records import Echo, Recalled, Speaker
from service.models import JsonObject

AUTO: Final = "mem:<i>"
"""The default ref of :func:`mem`."""


def mem(
    i: int,
    content: str,
    *,
    ref: str | None = AUTO,
    source: JsonObject | None = None,
    msg_id: str = "",
    timestamp: str = "",
    confidence: Confidence | None = None,
    match_reason: MatchReason | None = None,
) -> Recalled:
    """A recalled memory ``mem:<i>`` (``ref`` overrides it: None or ``""`` for none)."""
    return Recalled(
        kind="mem",
        id=i,
        ref=f"mem:{i}" if ref == AUTO else ref,
        content=content,
        source={} if source is None else source,
        timestamp=timestamp,
        msg_id=msg_id,
        confidence=confidence,
        match_reason=match_reason,
    )


def episode(i: int, content: str) -> Recalled:
    """A recalled episode ``ep:<i>`` with its fixed source."""
    return Recalled("ep", i, f"ep:{i}", content, {"System": "episode"}, "", "", None, None)


def profile(content: str) -> Recalled:
    """The profile row: no ref, its own source."""
    return Recalled("profile", 0, None, content, {"System": "profile"}, "", "", None, None)


def echo(content: str, speaker: Speaker | None = None) -> Echo:
    """A conversation turn echoed back (no ref)."""
    return Echo(content, speaker or Speaker("Agent", "self"), "")


def wire(row: Shaped) -> JsonObject:
    """The compact wire row of a shaped row."""
    return render_recall.shaped(row)


def wires(rows: Sequence[Shaped]) -> list[JsonObject]:
    return [wire(row) for row in rows]


def whole(rows: Sequence[RecallRow]) -> list[JsonObject]:
    """The compact wire rows of ``rows`` sent whole."""
    return [wire(Shaped(row)) for row in rows]
