"""The second stage of the default (``hybrid``) recall: the best fused rows reordered by
cheap, explainable text and time signals. Pure functions.

The retrieval computes, for every candidate, two features of the query's English stems
(Postgres's own Snowball stems, so no second stemmer has to agree with the index):

* ``coverage`` - the IDF-weighted share of the distinct query stems the row holds (a row
  answering every part of the question beats one repeating its most common word);
* ``phrase``   - the share of consecutive query stem pairs the row holds at the query's own
  distance (``a <N> b``: "ice cream" is not "cream ... ice").

Here two signals that only some queries ask for join them:

* ``recency`` - where the row's timestamp lies between the oldest (0) and newest (1) of the
  reordered rows, only when the query asks for what is newest (``latest``, ``now``,
  ``these days``...);
* ``date``    - how close the row's timestamp is to a calendar date, month or year the
  query names ("on May 3, 2023", "in July 2023", "in 2022", "2023-05-03"): 1 inside it,
  falling linearly to 0 over ``DATE_SLACK_DAYS``.

A reordered row scores ``hybrid + sum(weight * feature)``. Only the best ``depth`` rows by
fused score are reordered; the others keep their fused score and, since features only
add, stay below. No learned model: the weights are few, fixed and measured
(docs/benchmarks/quality.md).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from service.memory.recall.candidate import Candidate, Identity, evolve, hybrid_of, sorted_desc
from service.memory.recall.time import parse_timestamp

DATE_SLACK_DAYS: Final = 7.0
TEMPORAL_WORDS = frozenset(
    {"latest", "recent", "recently", "newest", "current", "currently", "now", "nowadays"}
    | {"lately", "today", "anymore", "still"}
)
TEMPORAL_PHRASES = ("last time", "most recent", "these days", "right now")
MONTHS: Final = {
    name: number
    for number, name in enumerate(
        (
            *("january", "february", "march", "april", "may", "june", "july"),
            *("august", "september", "october", "november", "december"),
        ),
        start=1,
    )
}
_MONTH = r"(" + "|".join(MONTHS) + r")"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTH_DAY = re.compile(_MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?\b", re.I)
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r"(?:,?\s+(\d{4}))?\b", re.I)
_MONTH_YEAR = re.compile(r"\b" + _MONTH + r"(?:,?\s+(\d{4}))?\b", re.I)
_YEAR = re.compile(r"\b(?:in|of|during|since|from)\s+((?:19|20)\d{2})\b", re.I)
_LETTERS = re.compile(r"[a-z]+")


@dataclasses.dataclass(frozen=True, slots=True)
class Weights:
    """How much each feature adds to a reordered row's fused score (0 turns one off)."""

    coverage: float = 0.15
    phrase: float = 0.05
    recency: float = 0.1
    date: float = 0.2


DEFAULT_WEIGHTS: Final = Weights()


@dataclasses.dataclass(frozen=True, slots=True)
class TextFeatures:
    """The retrieval's features of one row (None: not computed, e.g. no English stems)."""

    coverage: float | None = None
    phrase: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Period:
    """A calendar period a query names; ``year`` None means that month or day of any year."""

    year: int | None
    month: int | None = None
    day: int | None = None


def _year(text: str | None) -> int | None:
    return int(text) if text else None


def date_period(query: str) -> Period | None:
    """The first calendar date, month or year the query names, or None."""
    if (found := _ISO_DATE.search(query)) is not None:
        return Period(int(found.group(1)), int(found.group(2)), int(found.group(3)))
    if (found := _MONTH_DAY.search(query)) is not None:
        month = MONTHS[found.group(1).lower()]
        return Period(_year(found.group(3)), month, int(found.group(2)))
    if (found := _DAY_MONTH.search(query)) is not None:
        month = MONTHS[found.group(2).lower()]
        return Period(_year(found.group(3)), month, int(found.group(1)))
    for found in _MONTH_YEAR.finditer(query):
        word = found.group(1).lower()
        if word == "may" and not found.group(2):
            continue  # the modal verb
        return Period(_year(found.group(2)), MONTHS[word])
    if (found := _YEAR.search(query)) is not None:
        return Period(int(found.group(1)))
    return None


def _bounds(period: Period, year: int) -> tuple[datetime, datetime] | None:
    """[start, end) of the period in ``year``; None for an impossible date (Feb 30)."""
    try:
        if period.month is None:
            return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        if period.day is None:
            start = datetime(year, period.month, 1, tzinfo=UTC)
            end = datetime(year + period.month // 12, period.month % 12 + 1, 1, tzinfo=UTC)
            return start, end
        start = datetime(year, period.month, period.day, tzinfo=UTC)
        return start, start + timedelta(days=1)
    except ValueError:
        return None


def date_closeness(period: Period, moment: datetime | None) -> float:
    """1 inside the period, then linearly down to 0 over ``DATE_SLACK_DAYS`` days; a period
    without a year is tried in the moment's year and its neighbours."""
    if moment is None:
        return 0.0
    years = [period.year] if period.year is not None else [moment.year + d for d in (-1, 0, 1)]
    best = 0.0
    for year in years:
        bounds = _bounds(period, year)
        if bounds is None:
            continue
        start, end = bounds
        if start <= moment < end:
            return 1.0
        gap = start - moment if moment < start else moment - end
        best = max(best, 1.0 - gap.total_seconds() / 86_400.0 / DATE_SLACK_DAYS)
    return best


def asks_for_recency(query: str) -> bool:
    """Whether the query asks for what is newest (recency is a signal only then)."""
    lowered = query.lower()
    return bool(set(_LETTERS.findall(lowered)) & TEMPORAL_WORDS) or any(
        phrase in lowered for phrase in TEMPORAL_PHRASES
    )


def recency(moments: Sequence[datetime | None]) -> list[float]:
    """Each moment's place between the oldest (0) and newest (1); unknown counts 0."""
    known = [m.timestamp() for m in moments if m is not None]
    if not known:
        return [0.0] * len(moments)
    low, span = min(known), max(known) - min(known)
    return [
        0.0 if m is None else (1.0 if span <= 0 else (m.timestamp() - low) / span) for m in moments
    ]


def _time_bonus(head: Sequence[Candidate], query: str, weights: Weights) -> list[float]:
    """The recency and date part of each head row's bonus (0 unless the query asks)."""
    period = date_period(query) if weights.date else None
    recent = weights.recency > 0 and asks_for_recency(query)
    if period is None and not recent:
        return [0.0] * len(head)
    moments = [parse_timestamp(row.timestamp) if row.timestamp else None for row in head]
    bonus = [weights.recency * r for r in recency(moments)] if recent else [0.0] * len(head)
    if period is not None:
        bonus = [
            b + weights.date * date_closeness(period, m)
            for b, m in zip(bonus, moments, strict=True)
        ]
    return bonus


def rerank(
    rows: Sequence[Candidate],
    features: Mapping[Identity, TextFeatures],
    query: str,
    *,
    depth: int = 50,
    weights: Weights = DEFAULT_WEIGHTS,
) -> list[Candidate]:
    """Reorder the best ``depth`` non-profile rows of a hybrid-fused list (see the module
    docstring); the rest keep their order below them, profile rows stay last."""
    scored = [row for row in rows if not row.is_profile]
    head = scored[: max(0, depth)]
    if not head:
        return list(rows)
    times = _time_bonus(head, query, weights)
    changed = []
    for row, extra in zip(head, times, strict=True):
        found = features.get(row.identity, TextFeatures())
        bonus = extra + weights.coverage * (found.coverage or 0.0)
        bonus += weights.phrase * (found.phrase or 0.0)
        if bonus:
            row = evolve(row, hybrid=(row.hybrid or 0.0) + bonus)
        changed.append(row)
    ordered = sorted_desc(changed, hybrid_of) + scored[len(head) :]
    return ordered + [row for row in rows if row.is_profile]
