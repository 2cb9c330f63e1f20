"""Confidence scoring (docs/tools.md, "Confidence scoring", off by default): cosine backfill, age,
decay, completion and recency penalties, and the per-row breakdown."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NotRequired, TypedDict

from service.memory.recall.candidate import (
    DEFAULT_TUNABLES,
    Candidate,
    Identity,
    Tunables,
    confidence_of,
    sorted_desc,
)
from service.memory.recall.time import NO_SPAN, TimeSpan, as_utc, hours, parse_timestamp


class ConfidenceInfo(TypedDict):
    """The ``confidence`` object of a recall message (docs/tools.md, "Recall rows")."""

    age_hours: float
    score: float
    age_unknown: NotRequired[bool]
    resolved: NotRequired[bool]
    cosine: NotRequired[float]


@dataclass(frozen=True, slots=True)
class Confidence:
    """One row's confidence breakdown, already rounded as it is reported."""

    age_hours: float
    score: float
    age_unknown: bool = False
    resolved: bool = False
    cosine: float | None = None

    def as_dict(self) -> ConfidenceInfo:
        """The message form: optional keys appear only when true / known."""
        info: ConfidenceInfo = {"age_hours": self.age_hours, "score": self.score}
        if self.age_unknown:
            info["age_unknown"] = True
        if self.resolved:
            info["resolved"] = True
        if self.cosine is not None:
            info["cosine"] = self.cosine
        return info


def backfill_cosines(
    rows: Sequence[Candidate], cosines: Mapping[Identity, float]
) -> list[Candidate]:
    """Give cosine-less rows their stored-embedding cosine, marked as backfilled.

    Only rows without a cosine are touched; the mark is what allows the ``gate_fallback``
    rescue (docs/tools.md, "Gate fallback"). The caller computes ``cosines`` (same-width embeddings
    only).
    """
    return [
        replace(row, cosine=cosines[row.identity], cosine_backfilled=True)
        if row.cosine is None and row.identity in cosines
        else row
        for row in rows
    ]


def _recall_stats(row: Candidate) -> tuple[int, datetime | None]:
    """Recall statistics; episodes never read memory stats (docs/tools.md, "Confidence scoring", the
    id spaces overlap)."""
    if row.kind != "mem":
        return 0, None
    last = None if row.last_recalled_at is None else as_utc(row.last_recalled_at)
    return max(0, row.recall_count), last


def _age_hours(row: Candidate, now: datetime, span: TimeSpan, t: Tunables) -> tuple[float, bool]:
    """Row age in hours and whether it was imputed.

    An unknown age sits mid-range of the scope's ages (anchored on the newest row's age),
    or at ``max(min_range, range)/2`` without an anchor: neither newest nor oldest.
    """
    moment = parse_timestamp(row.timestamp)
    if moment is not None:
        return max(0.0, hours(now - moment)), False
    if span.newest_age_hours is not None:
        return span.newest_age_hours + span.range_hours / 2, True
    return max(t.min_time_range_hours, span.range_hours) / 2, True


def _decay_floor(row: Candidate, now: datetime, t: Tunables) -> float:
    """Recall-boosted decay floor: often-recalled rows fade less, the boost itself fades."""
    count, last = _recall_stats(row)
    boost = math.log(1 + count) * t.recall_boost
    if boost > 0 and last is not None:
        boost *= 1.0 / (1.0 + max(0.0, hours(now - last)) * t.boost_decay_rate)
    return min(t.decay_ceil, t.decay_floor + boost)


def _time_decay(age: float, floor: float, span: TimeSpan, t: Tunables) -> float:
    """Hyperbolic age decay, slowed for corpora spanning more than the reference window."""
    rate = t.decay_rate
    if span.range_hours > 0:
        rate /= max(1.0, max(t.min_time_range_hours, span.range_hours) / t.reference_hours)
    return max(floor, 1.0 / (1.0 + age * rate))


def _recency_penalty(row: Candidate, now: datetime, t: Tunables) -> float:
    """Demote a row recalled within the last few minutes, to rotate what surfaces."""
    _, last = _recall_stats(row)
    if last is None:
        return 1.0
    minutes = max(0.0, (now - last).total_seconds() / 60.0)
    return t.recent_recall_penalty if minutes < t.recent_recall_window_min else 1.0


def _normalised_cosine(cosine: float, t: Tunables) -> float:
    width = t.cosine_ceil - t.cosine_floor
    return max(0.0, min(1.0, (cosine - t.cosine_floor) / width)) if width > 0 else 0.0


def confidence_score(
    row: Candidate,
    *,
    now: datetime,
    deep: bool = False,
    span: TimeSpan = NO_SPAN,
    tunables: Tunables = DEFAULT_TUNABLES,
) -> Confidence:
    """One row's confidence: ``sqrt(norm_cos * time_decay) * completion * recency``.

    Without a cosine the factor ``norm_cos`` is dropped (an upper bound of the cosine
    branch). ``deep`` disables time decay, the resolved-episode factor and the recency
    penalty. Score rounded to 4 dp, age to 1 dp, reported cosine to 4 dp.
    """
    t, now = tunables, as_utc(now)
    age, unknown = _age_hours(row, now, span, t)
    decay = 1.0 if deep else _time_decay(age, _decay_floor(row, now, t), span, t)
    completion = t.resolved_decay_factor if row.resolved and not deep else 1.0
    recency = 1.0 if deep else _recency_penalty(row, now, t)
    base = decay if row.cosine is None else _normalised_cosine(row.cosine, t) * decay
    return Confidence(
        age_hours=round(age, 1),
        score=round(math.sqrt(base) * completion * recency, 4),
        age_unknown=unknown,
        resolved=row.resolved,
        cosine=None if row.cosine is None else round(row.cosine, 4),
    )


def score_confidence(
    rows: Sequence[Candidate],
    *,
    now: datetime,
    deep: bool = False,
    span: TimeSpan = NO_SPAN,
    tunables: Tunables = DEFAULT_TUNABLES,
) -> list[Candidate]:
    """Set every row's confidence and re-sort by it, descending and stable.

    From here on the gate and ``match_reason`` key on confidence; the fusion mode only
    chose the candidates.
    """

    def scored(row: Candidate) -> Candidate:
        info = confidence_score(row, now=now, deep=deep, span=span, tunables=tunables)
        return replace(row, confidence=info.score)

    return sorted_desc(map(scored, rows), confidence_of)
