"""The time cue of a recall, in pure functions (docs/tools.md, "Time cues").

A caller that half-remembers *when* something was stored passes ``time_cue``. It
becomes a period; one more retrieval arm (the cue arm, ``cued``) searches that period;
after the gate, autocut and the ``limit`` cut have decided which rows are returned, a
returned row the cue arm also found moves up by at most ``LIFT`` places, and up to
``SEATS`` held places take the best cue-arm rows the answer does not hold. The cue
never touches a score or the gate, so the rows that pass the gate are those of the same
recall without a cue.

Everything a measurement could move (the margins, the lift, the seats, the widening
step) belongs to the policy version, ``POLICY``, which every cued answer names.

No I/O and no clock here: ``now`` and the scope's span are arguments.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, TypeAlias, TypeVar, cast

from service.errors import InvalidInput
from service.memory import bounds
from service.memory.recall.time import as_utc

POLICY: Final = "cued-v0.3"
"""The cue policy's version: margins, lift, seats and widening as below."""

Confidence: TypeAlias = Literal["sure", "likely", "vague"]
Unit: TypeAlias = Literal["days", "weeks", "months"]
Period: TypeAlias = tuple[datetime, datetime]
"""A half-open period ``[start, end)``, aware UTC datetimes."""

CONFIDENCES: Final[tuple[Confidence, ...]] = ("sure", "likely", "vague")
MARGIN: Final[Mapping[Confidence, float]] = {"sure": 0.0, "likely": 0.5, "vague": 1.0}
"""How far a period widens on each side, as a fraction of its own length."""
LIFT: Final[Mapping[Confidence, int]] = {"sure": 3, "likely": 2, "vague": 1}
"""The most places a returned row the cue arm found moves up."""
SEATS: Final[Mapping[Confidence, int]] = LIFT
"""Held places for cue-arm rows the answer does not hold: as many as the lift."""
WIDER: Final[Mapping[Confidence, Confidence | None]] = {
    "sure": "likely",
    "likely": "vague",
    "vague": None,
}
"""One confidence step wider, for the one widening (a vague cue cannot widen)."""
RANK_CONSTANT: Final = 61
"""The reciprocal-rank constant of the cue arm's merge and of the lift's bound (the
fusion's k = 60 with ranks counted from 1)."""
DEPTH: Final = 50
"""Rows the cue arm searches to in each of its lists, whatever the ``limit``."""
RECENT_ONLY: Final = timedelta(hours=24)
"""A cue whose own period starts no earlier than this before now names only today or
the future; such a cue is ignored (an agent filling in today's date for a request that
named no time is the usual way a cue goes wrong)."""
INSTANT_CHARS: Final = bounds.NAME_CHARS
"""The bound of ``time_cue.after`` and ``time_cue.before`` (a short word)."""

UNITS: Final[Mapping[Unit, timedelta]] = {
    "days": timedelta(days=1),
    "weeks": timedelta(weeks=1),
    "months": timedelta(days=30),
}
"""A month is 30 days."""

_FIELDS: Final = frozenset({"after", "before", "ago", "confidence"})
_DATE_ONLY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_EARLIEST: Final = datetime.min.replace(tzinfo=UTC)
_LATEST: Final = datetime.max.replace(tzinfo=UTC)
EITHER: Final = "time_cue needs either after/before or ago, not both and not neither"


@dataclasses.dataclass(frozen=True, slots=True)
class TimeCue:
    """A cue as read: its confidence and one of an absolute period (``after`` and/or
    ``before``, aware UTC), a relative one (``ago``: unit and count) or ``long_ago``."""

    confidence: Confidence
    after: datetime | None = None
    before: datetime | None = None
    ago: tuple[Unit, int] | None = None
    long_ago: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Span:
    """MIN/MAX of the parseable memory timestamps in the recall's scope (None: empty)."""

    oldest: datetime | None = None
    newest: datetime | None = None


def _later(moment: datetime, delta: timedelta) -> datetime:
    """``moment + delta``, clipped to the last representable instant."""
    try:
        return moment + delta
    except OverflowError:
        return _LATEST


def _earlier(moment: datetime, delta: timedelta) -> datetime:
    """``moment - delta``, clipped to the first representable instant."""
    try:
        return moment - delta
    except OverflowError:
        return _EARLIEST


def _instant(value: object, field: str, end_of_day: bool) -> datetime:
    """One bound: ``YYYY-MM-DD`` is the whole UTC day (``before`` is midnight of the next
    day, so the day is included), else an ISO-8601 timestamp (``Z`` accepted, naive = UTC)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"time_cue.{field} must be a date (YYYY-MM-DD) or an ISO-8601 timestamp")
    bounds.check_text(f"time_cue.{field}", value, INSTANT_CHARS)
    text = value.strip()
    try:
        if _DATE_ONLY.fullmatch(text):
            day = datetime.fromisoformat(text).replace(tzinfo=UTC)
            return _later(day, timedelta(days=1)) if end_of_day else day
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
        return as_utc(moment)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(f"time_cue.{field} is not a date or timestamp: {text!r}") from exc


def _confidence(raw: Mapping[str, object]) -> Confidence:
    value = raw.get("confidence")
    for confidence in CONFIDENCES:
        if value == confidence:
            return confidence
    raise InvalidInput("time_cue.confidence is required: one of sure, likely, vague")


def _ago(confidence: Confidence, ago: object) -> TimeCue:
    if ago == "long_ago":
        return TimeCue(confidence, long_ago=True)
    if not isinstance(ago, Mapping) or set(ago) != {"unit", "value"}:
        raise InvalidInput('time_cue.ago must be {"unit": ..., "value": ...} or "long_ago"')
    unit, value = ago["unit"], ago["value"]
    if not isinstance(unit, str) or unit not in UNITS:
        raise InvalidInput("time_cue.ago.unit must be one of days, weeks, months")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput("time_cue.ago.value must be a whole number, 0 or more")
    return TimeCue(confidence, ago=(cast(Unit, unit), value))


def parse(raw: Mapping[str, object] | None) -> TimeCue | None:
    """Read a ``time_cue`` argument (None: no cue). InvalidInput, with a message that
    names the part, for a cue that cannot be read, rather than ignoring it: a caller must
    never believe a cue was applied that was not. The schema refuses some of these first
    (an unknown field, no ``confidence``); the library checks again because it trusts no
    boundary."""
    if raw is None:
        return None
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise InvalidInput(f"time_cue has unknown fields: {unknown}")
    confidence = _confidence(raw)
    absolute = "after" in raw or "before" in raw
    if absolute == ("ago" in raw):
        raise InvalidInput(EITHER)
    if not absolute:
        return _ago(confidence, raw["ago"])
    after = _instant(raw["after"], "after", False) if "after" in raw else None
    before = _instant(raw["before"], "before", True) if "before" in raw else None
    if after is not None and before is not None and before <= after:
        raise InvalidInput("time_cue.before must be later than time_cue.after")
    return TimeCue(confidence, after=after, before=before)


def needs_span(cue: TimeCue) -> bool:
    """Whether the cue's period depends on the scope's span (``before`` alone and
    ``long_ago``): only then does the recall read MIN/MAX of its memory timestamps."""
    return cue.long_ago or (cue.ago is None and cue.after is None)


def _own_period(cue: TimeCue, now: datetime, span: Span) -> Period | None:
    """The period the cue names, before any margin; None when it needs the scope's span
    and the scope holds no timestamp."""
    if cue.long_ago:
        if span.oldest is None or span.newest is None:
            return None
        return span.oldest, span.oldest + (span.newest - span.oldest) / 3
    if cue.ago is not None:
        unit, count = cue.ago
        width = UNITS[unit]
        try:
            centre = now - width * count
        except OverflowError:
            centre = _EARLIEST
        return _earlier(centre, width / 2), min(_later(centre, width / 2), now)
    start = cue.after if cue.after is not None else span.oldest
    if start is None:
        return None
    return start, cue.before if cue.before is not None else now


def period(cue: TimeCue, confidence: Confidence, now: datetime, span: Span) -> Period | None:
    """The half-open period ``[start, end)`` the cue names, widened on each side by
    ``confidence``'s margin (a fraction of its length). ``after`` alone ends now,
    ``before`` alone starts at the scope's oldest timestamp, ``ago`` N units is the
    unit-long period centred N units ago (never past now), ``long_ago`` the oldest third
    of the scope's span. A period that ends where it starts is made 1 s long. None when
    the cue needs the span and the scope has none. ``confidence`` is separate from the
    cue's own so that the widening can ask for the next step's width."""
    own = _own_period(cue, as_utc(now), span)
    if own is None:
        return None
    start, end = own
    if end <= start:
        end = _later(start, timedelta(seconds=1))
    margin = (end - start) * MARGIN[confidence]
    return _earlier(start, margin), _later(end, margin)


def recent_only(cue: TimeCue, now: datetime, span: Span) -> Period | None:
    """The cue's own period (at ``sure`` width) when it starts no more than
    ``RECENT_ONLY`` before now, so the cue is ignored; else None (the cue is used)."""
    own = period(cue, "sure", now, span)
    if own is not None and own[0] >= as_utc(now) - RECENT_ONLY:
        return own
    return None


def iso(window: Period) -> list[str]:
    """A period as the answer spells it: two ISO-8601 instants with ``+00:00``."""
    return [window[0].isoformat(), window[1].isoformat()]


Row = TypeVar("Row")
Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank(lists: Sequence[Sequence[Key | None]], depth: int = DEPTH) -> list[Key]:
    """The cue arm's lists merged by reciprocal rank (``1 / (RANK_CONSTANT + rank)``,
    ranks from 0), best first, ``depth`` at most; ties keep the order first seen. A
    ``None`` is a hole (a row ``exclude_contents`` left out): it keeps its rank's place
    and gets no vote."""
    votes: dict[Key, float] = {}
    for ranked in lists:
        for rank, key in enumerate(ranked):
            if key is not None:
                votes[key] = votes.get(key, 0.0) + 1.0 / (RANK_CONSTANT + rank)
    return sorted(votes, key=lambda key: -votes[key])[:depth]


def lift(
    rows: Sequence[Row], cue_rank: Mapping[Key, int], bound: int, key_of: Callable[[Row], Key]
) -> tuple[list[Row], int]:
    """Move the rows the cue arm found (``cue_rank``, from 0) toward the best end of
    ``rows`` (best first) by at most ``bound`` places; returns the new order and how
    many rows changed position.

    The sort key is ``position - bound * 61 / (61 + cue_rank)``, ascending; a tie between
    a found row and another goes to the found row, any other tie keeps the order. A found
    row passes at most ``bound`` rows, so no row moves up further than that however many
    move at once, and the row the arm ranks first moves exactly ``bound`` places when it
    stands that far down."""
    if bound <= 0 or not cue_rank:
        return list(rows), 0

    def sort_key(item: tuple[int, Row]) -> tuple[float, int, int]:
        position, row = item
        found = cue_rank.get(key_of(row))
        if found is None:
            return (float(position), 1, position)
        return (position - bound * RANK_CONSTANT / (RANK_CONSTANT + found), 0, position)

    order = sorted(enumerate(rows), key=sort_key)
    moved = sum(1 for new, (old, _) in enumerate(order) if new != old)
    return [row for _, row in order], moved
