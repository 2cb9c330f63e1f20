"""Time in ranking: lenient timestamp parsing and the span of the memories in scope."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """The temporal span of the memories in scope, feeding confidence scoring
    (docs/tools.md, "Confidence scoring").

    ``range_hours`` is newest minus oldest parseable timestamp (0 when unknown);
    ``newest_age_hours`` is how old the newest one is at ``now`` (``None`` when unknown),
    the anchor that places a row of unknown age mid-range.
    """

    range_hours: float = 0.0
    newest_age_hours: float | None = None


NO_SPAN: Final = TimeSpan()


def parse_timestamp(value: str) -> datetime | None:
    """Parse a stored ISO-8601 timestamp into an aware UTC datetime, or ``None``.

    Lenient on purpose: timestamps are caller-supplied text (docs/tools.md, "Store steps"). A
    trailing ``Z`` is accepted, a naive value is taken as UTC
    (docs/tools.md, "Episode boundary penalty"), and anything unparseable (including ``""``) yields
    ``None`` so that callers fall back to "no time" instead of failing.
    """
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        return as_utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):
        return None


def as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def hours(delta: timedelta) -> float:
    return delta.total_seconds() / 3600.0


def time_span(oldest: datetime | None, newest: datetime | None, now: datetime) -> TimeSpan:
    """The :class:`TimeSpan` from the MIN/MAX parseable memory timestamps in scope.

    Either bound missing means no span at all (range 0, no anchor). Ages are clamped at 0 so
    a future timestamp cannot make the anchor negative.
    """
    if oldest is None or newest is None:
        return TimeSpan()
    lo, hi = as_utc(oldest), as_utc(newest)
    return TimeSpan(
        range_hours=max(0.0, hours(hi - lo)),
        newest_age_hours=max(0.0, hours(as_utc(now) - hi)),
    )
