"""Ranking maths of the recall pipeline (spec §3), pure and deterministic.

The storage layer only retrieves candidate rows, one list per channel (vector, episode
full-text, memory full-text/keyword, profile). Everything that turns those lists into the
ordered answer lives here, in pipeline order (§3.1): fusion (§3.3), the episode-boundary
penalty (§3.4), confidence scoring (§3.8), the quality gate (§3.5), the ``gate_fallback``
rescue (§3.6), autocut (§3.7) and the final cut-and-reverse (§3.1 step 9), plus the
``match_reason`` a message carries (§2.2). :func:`rank` chains steps 5 and 7-9;
:func:`recall_mode` and :func:`vector_min_similarity` are the two retrieval-side rules
(§3.1 step 4, §3.2) the storage layer needs before it can retrieve.

Contract:

* No I/O, no clock, no configuration lookup: time enters as an explicit ``now`` and every
  tunable as an argument (:class:`Tunables` carries the §8 defaults). Standard library only.
* Rows are frozen :class:`Candidate` values; every step returns a new list and never
  mutates its input. Sorting is stable, so equal scores keep retrieval order.
* Exclusion (``exclude_contents``, §4.5) is decided by the caller, which knows the matching
  rule and which channels it applies to (§3.3: vector and memory-keyword rows, never
  episode full-text rows). The caller hands a channel over with each excluded row replaced
  by ``None`` (a *hole*, see :func:`mark_excluded`). A hole keeps its position, so an rrf
  rank still counts the place the excluded row occupied (§3.3), yet the row never surfaces.
  Holes were chosen over an ``excluded`` predicate because one predicate cannot tell an
  episode found by the vector channel (excludable) from the same episode found by
  episode full-text (never excluded).
* Timestamps are the stored ISO-8601 strings, parsed leniently (:func:`parse_timestamp`):
  naive means UTC, a trailing ``Z`` is accepted, anything unparseable counts as "no time".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, NotRequired, TypeAlias, TypedDict

Kind: TypeAlias = Literal["mem", "ep", "profile"]
Mode: TypeAlias = Literal["rrf", "rsf", "cascade"]
Signal: TypeAlias = Literal["confidence", "rsf", "cosine", "rrf"]
Identity: TypeAlias = tuple[Kind, int]

PROFILE_ID: Final = -1
"""Id of the injected profile sentinel row (§3.2 "Profile injection")."""
PROFILE_MIN_POOL: Final = 50
"""Pool size from which the profile row passes the gate (§3.5 branch 1, §12 item 3)."""
UNSCORED_MIN_POOL: Final = 100
"""Pool size from which unscored rows pass the gate of a non-empty query (§3.5 branch 6)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One recall row and the signals it has earned so far.

    ``None`` means "never computed" rather than zero: a row without any of ``confidence``,
    ``rsf``, ``cosine`` or ``rrf`` is *unscored* (§3.5 branch 6) and carries no
    ``match_reason`` (§2.2). ``lexical`` is the full-text score on a higher-is-better scale
    (``-bm25`` in CPersona, the Postgres retriever's own rank here, §13), ``None`` for the
    LIKE fallback. ``timestamp`` is the caller's timestamp for a memory, ``start_time`` else
    ``created_at`` for an episode, ``""`` for the profile. ``resolved`` is only set on
    episodes; ``recall_count`` and ``last_recalled_at`` only mean something on memories.
    """

    kind: Kind
    id: int
    content: str
    timestamp: str = ""
    created_at: datetime | None = None
    cosine: float | None = None
    lexical: float | None = None
    rrf: float | None = None
    rsf: float | None = None
    confidence: float | None = None
    cosine_backfilled: bool = False
    resolved: bool = False
    recall_count: int = 0
    last_recalled_at: datetime | None = None

    @property
    def identity(self) -> Identity:
        """Fusion identity (§3.3): memory 1 and episode 1 are different rows (§4.6)."""
        return (self.kind, self.id)

    @property
    def is_profile(self) -> bool:
        """Whether this is the injected profile sentinel."""
        return self.kind == "profile"


Channel: TypeAlias = Sequence[Candidate | None]
"""One retriever's rows in rank order; ``None`` marks an excluded row (a hole)."""


@dataclass(frozen=True, slots=True)
class Tunables:
    """The recall and confidence tunables of spec §8, with their defaults.

    Floors that the reference applies when parsing (``RRF_K`` at least 1, autocut
    ``MIN_RESULTS`` at least 2) are applied again where the value is used, so a raw value
    can never divide by zero or make autocut look at a one-row list.
    """

    rrf_k: int = 60
    rrf_threshold_factor: float = 0.5
    episode_penalty_enabled: bool = True
    episode_decay_rate: float = 0.01
    episode_decay_floor: float = 0.5
    autocut_enabled: bool = True
    autocut_min_results: int = 3
    autocut_min_gap_ratio: float = 0.15
    confidence_enabled: bool = False
    cosine_floor: float = 0.20
    cosine_ceil: float = 0.75
    decay_rate: float = 0.005
    decay_floor: float = 0.3
    decay_ceil: float = 0.5
    recall_boost: float = 0.02
    boost_decay_rate: float = 0.002
    min_time_range_hours: float = 24.0
    reference_hours: float = 168.0
    resolved_decay_factor: float = 0.3
    recent_recall_penalty: float = 0.7
    recent_recall_window_min: float = 5.0


DEFAULT_TUNABLES: Final = Tunables()


@dataclass(frozen=True, slots=True)
class CalibratedGate:
    """A calibrated gate threshold and the signal it was calibrated on (§3.5, §10.7).

    It replaces the heuristic only in the gate branch of the same signal, so a gate
    calibrated under another configuration never meets a score of a different scale.
    An ``rrf`` gate is on the raw rrf scale.
    """

    threshold: float
    signal: Signal


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """The temporal span of the memories in scope, feeding confidence scoring (§3.8).

    ``range_hours`` is newest minus oldest parseable timestamp (0 when unknown);
    ``newest_age_hours`` is how old the newest one is at ``now`` (``None`` when unknown),
    the anchor that places a row of unknown age mid-range.
    """

    range_hours: float = 0.0
    newest_age_hours: float | None = None


NO_SPAN: Final = TimeSpan()


class ConfidenceInfo(TypedDict):
    """The ``confidence`` object of a recall message (§2.2)."""

    age_hours: float
    score: float
    age_unknown: NotRequired[bool]
    resolved: NotRequired[bool]
    cosine: NotRequired[float]


@dataclass(frozen=True, slots=True)
class Confidence:
    """One row's confidence breakdown (§3.8), already rounded as it is reported."""

    age_hours: float
    score: float
    age_unknown: bool = False
    resolved: bool = False
    cosine: float | None = None

    def as_dict(self) -> ConfidenceInfo:
        """The message form: optional keys appear only when true / known (§2.2)."""
        info: ConfidenceInfo = {"age_hours": self.age_hours, "score": self.score}
        if self.age_unknown:
            info["age_unknown"] = True
        if self.resolved:
            info["resolved"] = True
        if self.cosine is not None:
            info["cosine"] = self.cosine
        return info


class MatchReason(TypedDict):
    """The ``match_reason`` object of a recall message (§2.2)."""

    signal: Signal
    score: float
    cosine: NotRequired[float]
    rrf: NotRequired[float]
    rsf: NotRequired[float]


# --- time ------------------------------------------------------------------------------


def parse_timestamp(value: str) -> datetime | None:
    """Parse a stored ISO-8601 timestamp into an aware UTC datetime, or ``None``.

    Lenient on purpose: timestamps are caller-supplied text (§5.1). A trailing ``Z`` is
    accepted, a naive value is taken as UTC (§3.4), and anything unparseable (including
    ``""``) yields ``None`` so that callers fall back to "no time" instead of failing.
    """
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        return as_utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):
        return None


def as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already (§3.4)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _hours(delta: timedelta) -> float:
    return delta.total_seconds() / 3600.0


def time_span(oldest: datetime | None, newest: datetime | None, now: datetime) -> TimeSpan:
    """The :class:`TimeSpan` from the MIN/MAX parseable memory timestamps in scope (§3.8).

    Either bound missing means no span at all (range 0, no anchor). Ages are clamped at 0 so
    a future timestamp cannot make the anchor negative.
    """
    if oldest is None or newest is None:
        return TimeSpan()
    lo, hi = as_utc(oldest), as_utc(newest)
    return TimeSpan(
        range_hours=max(0.0, _hours(hi - lo)),
        newest_age_hours=max(0.0, _hours(as_utc(now) - hi)),
    )


# --- candidate assembly and fusion (§3.2, §3.3) ----------------------------------------


def recall_mode(configured: str, query: str) -> Mode:
    """The fusion mode of one recall (§3.1 step 4).

    ``rrf`` / ``rsf`` only for a query with non-whitespace text; any empty query, mode
    ``cascade`` or an unknown mode string falls back to cascade (a pure recency listing has
    nothing to fuse).
    """
    if not query.strip():
        return "cascade"
    if configured == "rrf":
        return "rrf"
    return "rsf" if configured == "rsf" else "cascade"


def vector_min_similarity(threshold: float, mode: Mode, factor: float = 0.5) -> float:
    """Similarity floor of the vector retriever (§3.2).

    Cascade uses the agent's vector threshold as is; rrf and rsf loosen it by
    ``RRF_THRESHOLD_FACTOR`` (0.3 x 0.5 = 0.15 by default) because the fused gate filters
    later.
    """
    return threshold if mode == "cascade" else threshold * factor


def mark_excluded(rows: Iterable[Candidate], excluded: Callable[[Candidate], bool]) -> Channel:
    """Replace each excluded row by a hole, keeping every position (§3.3)."""
    return [None if excluded(row) else row for row in rows]


def rrf_max_scale(k: int) -> float:
    """``RRF_MAX_SCALE = 3/(K+1)``: rank 0 in all three channels (§3.3, §8); K at least 1."""
    return 3.0 / (max(1, k) + 1)


def fuse_rrf(
    channels: Sequence[Channel], k: int = 60, *, profiles: Sequence[Candidate] = ()
) -> list[Candidate]:
    """Reciprocal-rank fusion (§3.3), then the profile rows appended (§3.2).

    Each row at 0-based position ``r`` of a channel adds ``1/(K + r + 1)`` to its
    identity's score; holes add nothing but still occupy their position. Pass channels in
    the canonical order (vector, episode full-text, memory full-text): the first occurrence
    of an identity is the row kept, so a vector hit keeps its cosine. Sorted by score,
    descending and stable (first-seen order breaks ties).
    """
    k = max(1, k)
    first: dict[Identity, Candidate] = {}
    scores: dict[Identity, float] = {}
    for channel in channels:
        for rank, row in enumerate(channel):
            if row is None:
                continue
            first.setdefault(row.identity, row)
            scores[row.identity] = scores.get(row.identity, 0.0) + 1.0 / (k + rank + 1)
    order = sorted(scores, key=scores.__getitem__, reverse=True)
    return [replace(first[key], rrf=scores[key]) for key in order] + list(profiles)


def normalise_channel(raw: Sequence[float | None]) -> list[float]:
    """Per-query min-max normalisation of one channel's raw scores to [0, 1] (§3.3 rsf).

    An all-``None`` channel (the LIKE fallback has no score) gives every row 1.0, so an
    exact substring match still casts a full vote. A single value or all-equal values give
    every row 1.0 (checked before the ``None`` rule, as the reference does); otherwise the
    lowest value maps to 0.0, the highest to 1.0, and a ``None`` among numbers to 0.0.
    """
    present = [value for value in raw if value is not None]
    if not present:
        return [1.0] * len(raw)
    lo, hi = min(present), max(present)
    if hi <= lo:
        return [1.0] * len(raw)
    return [0.0 if value is None else (value - lo) / (hi - lo) for value in raw]


def _unique_rows(channel: Channel) -> list[Candidate]:
    """The channel without holes and without repeated identities (first kept)."""
    seen: set[Identity] = set()
    rows: list[Candidate] = []
    for row in channel:
        if row is not None and row.identity not in seen:
            seen.add(row.identity)
            rows.append(row)
    return rows


def _cosine_of(row: Candidate) -> float | None:
    return row.cosine


def _lexical_of(row: Candidate) -> float | None:
    return row.lexical


def fuse_rsf(
    vector: Channel,
    lexical: Sequence[Channel] = (),
    *,
    profiles: Sequence[Candidate] = (),
    lexical_weight: float = 0.5,
) -> list[Candidate]:
    """Relative-score fusion (§3.3), then the profile rows appended (§3.2).

    The raw score is ``cosine`` on the vector channel and ``lexical`` on each full-text
    channel; each channel is min-max normalised (:func:`normalise_channel`) over its
    non-excluded rows. A row's fused score is the weighted sum of its normalised values
    divided by the total weight of the non-empty channels, which keeps it on the cosine
    [0, 1] scale for the gate. ``lexical_weight`` 0.5 weighs every channel equally (the
    spec); higher values trust full text more (each text channel gets ``2w``, the vector
    channel ``2(1-w)``). First occurrence of an identity is the row kept; sorted
    descending and stable.
    """
    sources = [(vector, _cosine_of, 2 * (1 - lexical_weight))] + [
        (channel, _lexical_of, 2 * lexical_weight) for channel in lexical
    ]
    first: dict[Identity, Candidate] = {}
    fused: dict[Identity, float] = {}
    active = 0.0
    for channel, signal, weight in sources:
        rows = _unique_rows(channel)
        active += weight if rows else 0.0
        for row, norm in zip(rows, normalise_channel([signal(r) for r in rows]), strict=True):
            first.setdefault(row.identity, row)
            fused[row.identity] = fused.get(row.identity, 0.0) + weight * norm
    divisor = active or 1.0
    order = sorted(fused, key=fused.__getitem__, reverse=True)
    return [replace(first[key], rsf=fused[key] / divisor) for key in order] + list(profiles)


def _extend_unique(out: list[Candidate], seen: set[Identity], channel: Channel) -> None:
    for row in channel:
        if row is not None and row.identity not in seen:
            seen.add(row.identity)
            out.append(row)


def cascade(
    vector: Channel,
    episodes: Channel,
    profiles: Sequence[Candidate],
    keyword: Channel,
    limit: int,
) -> list[Candidate]:
    """Legacy cascade recall (§3.3), also every empty-query recall (§3.1 step 4).

    Stages in order: vector rows, episode full-text rows, profile rows, then keyword rows
    filling ``limit - len(so far)`` slots. De-duplicated by identity; no fusion score is
    added and the stage order is kept. The keyword slots are counted on the keyword list as
    retrieved (the reference fetches exactly that many rows and then filters), so a hole or
    a duplicate inside the first ``remaining`` keyword rows uses up its slot.
    """
    out: list[Candidate] = []
    seen: set[Identity] = set()
    _extend_unique(out, seen, vector)
    _extend_unique(out, seen, episodes)
    out.extend(profiles)
    remaining = max(0, limit - len(out))
    _extend_unique(out, seen, keyword[:remaining])
    return out


# --- scoring before the gate (§3.4, §3.8) ----------------------------------------------


def backfill_cosines(
    rows: Sequence[Candidate], cosines: Mapping[Identity, float]
) -> list[Candidate]:
    """Give cosine-less rows their stored-embedding cosine, marked as backfilled (§3.8).

    Only rows without a cosine are touched; the mark is what allows the ``gate_fallback``
    rescue (§3.6). The caller computes ``cosines`` (same-width embeddings only).
    """
    return [
        replace(row, cosine=cosines[row.identity], cosine_backfilled=True)
        if row.cosine is None and row.identity in cosines
        else row
        for row in rows
    ]


def episode_penalty_factor(
    timestamp: str,
    boundary: datetime | None,
    rate: float = 0.01,
    floor: float = 0.5,
) -> float:
    """The episode-boundary factor of one row's timestamp (§3.4).

    1.0 with no boundary, an empty or unparseable timestamp, or a timestamp at or after the
    boundary; otherwise ``max(floor, exp(-rate * hours_before))`` (floor reached at about
    69.3 h with the defaults). Weakens memories from before the newest episode, i.e. from
    earlier sessions, so current-session rows take precedence.
    """
    if boundary is None:
        return 1.0
    moment = parse_timestamp(timestamp)
    edge = as_utc(boundary)
    if moment is None or moment >= edge:
        return 1.0
    return max(floor, math.exp(-rate * _hours(edge - moment)))


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _or_lowest(value: float | None) -> float:
    return -math.inf if value is None else value


def _rrf_of(row: Candidate) -> float | None:
    return row.rrf


def _rsf_of(row: Candidate) -> float | None:
    return row.rsf


def _confidence_of(row: Candidate) -> float | None:
    return row.confidence


def _sorted_desc(
    rows: Iterable[Candidate], signal: Callable[[Candidate], float | None]
) -> list[Candidate]:
    """Stable descending sort on one signal; rows without it sink to the bottom."""
    return sorted(rows, key=lambda row: _or_lowest(signal(row)), reverse=True)


def _resort_fused(rows: list[Candidate]) -> list[Candidate]:
    """Re-sort by rrf, else rsf, if every non-profile row has it (§3.4); profiles sink."""
    scored = [row for row in rows if not row.is_profile]
    if not scored:
        return rows
    for signal in (_rrf_of, _rsf_of):
        if all(signal(row) is not None for row in scored):
            return _sorted_desc(rows, signal)
    return rows


def apply_episode_penalty(
    rows: Sequence[Candidate],
    boundary: datetime | None,
    *,
    rate: float = 0.01,
    floor: float = 0.5,
    confidence_enabled: bool = False,
) -> list[Candidate]:
    """Multiply each non-episode row's cosine, rrf and rsf by its factor (§3.4).

    Episode rows are exempt; the profile has no timestamp and so gets 1.0. If any row was
    penalised and confidence is off (confidence re-sorts later anyway), a fused list is
    re-sorted so the penalty actually changes the order; cascade lists, where some rows have
    no fusion score, keep their stage order.
    """
    if boundary is None:
        return list(rows)
    factors = [
        1.0 if row.kind == "ep" else episode_penalty_factor(row.timestamp, boundary, rate, floor)
        for row in rows
    ]
    out = [_penalised(row, factor) for row, factor in zip(rows, factors, strict=True)]
    if min(factors, default=1.0) < 1.0 and not confidence_enabled:
        return _resort_fused(out)
    return out


def _penalised(row: Candidate, factor: float) -> Candidate:
    """The row with every fusion-relevant score it has multiplied by ``factor``."""
    if factor >= 1.0:
        return row
    return replace(
        row,
        cosine=_scaled(row.cosine, factor),
        rrf=_scaled(row.rrf, factor),
        rsf=_scaled(row.rsf, factor),
    )


def _recall_stats(row: Candidate) -> tuple[int, datetime | None]:
    """Recall statistics; episodes never read memory stats (§3.8, the id spaces overlap)."""
    if row.kind != "mem":
        return 0, None
    last = None if row.last_recalled_at is None else as_utc(row.last_recalled_at)
    return max(0, row.recall_count), last


def _age_hours(row: Candidate, now: datetime, span: TimeSpan, t: Tunables) -> tuple[float, bool]:
    """Row age in hours and whether it was imputed (§3.8).

    An unknown age sits mid-range of the scope's ages (anchored on the newest row's age),
    or at ``max(min_range, range)/2`` without an anchor: neither newest nor oldest.
    """
    moment = parse_timestamp(row.timestamp)
    if moment is not None:
        return max(0.0, _hours(now - moment)), False
    if span.newest_age_hours is not None:
        return span.newest_age_hours + span.range_hours / 2, True
    return max(t.min_time_range_hours, span.range_hours) / 2, True


def _decay_floor(row: Candidate, now: datetime, t: Tunables) -> float:
    """Recall-boosted decay floor: often-recalled rows fade less, the boost itself fades."""
    count, last = _recall_stats(row)
    boost = math.log(1 + count) * t.recall_boost
    if boost > 0 and last is not None:
        boost *= 1.0 / (1.0 + max(0.0, _hours(now - last)) * t.boost_decay_rate)
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
    """One row's confidence (§3.8): ``sqrt(norm_cos * time_decay) * completion * recency``.

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
    """Set every row's confidence and re-sort by it, descending and stable (§3.8).

    From here on the gate and ``match_reason`` key on confidence; the fusion mode only
    chose the candidates.
    """

    def scored(row: Candidate) -> Candidate:
        info = confidence_score(row, now=now, deep=deep, span=span, tunables=tunables)
        return replace(row, confidence=info.score)

    return _sorted_desc(map(scored, rows), _confidence_of)


# --- gate, rescue, autocut, cut (§3.5-§3.7, §3.1 step 9) -------------------------------


def heuristic_min_score(n: int, *, deep: bool = False) -> float:
    """The pool-size heuristic gate threshold (§3.5), halved for ``deep``.

    ``0.5`` for an empty pool, else ``round(0.5 - 0.3 * min(1, ln(n+1)/ln 500), 4)``: tiny
    pools are strict (0.5), from 499 rows on it bottoms out at 0.2.
    """
    base = 0.5 if n <= 0 else round(0.5 - 0.3 * min(1.0, math.log(n + 1) / math.log(500)), 4)
    return base * 0.5 if deep else base


def gate_score(row: Candidate) -> tuple[Signal, float] | None:
    """The signal and score the gate keys on: confidence > rsf > cosine > rrf (§3.5).

    ``None`` for an unscored row. The same precedence names ``match_reason.signal`` (§2.2)
    and is what gate calibration must measure (§10.7).
    """
    if row.confidence is not None:
        return "confidence", row.confidence
    if row.rsf is not None:
        return "rsf", row.rsf
    if row.cosine is not None:
        return "cosine", row.cosine
    if row.rrf is not None:
        return "rrf", row.rrf
    return None


def gate_threshold(signal: Signal, min_score: float, gate: CalibratedGate | None, k: int) -> float:
    """Threshold for one branch: the calibrated gate if it is for this signal, else the
    heuristic, rescaled to the rrf scale (times ``3/(K+1)``) on the rrf branch (§3.5)."""
    if gate is not None and gate.signal == signal:
        return gate.threshold
    return min_score * rrf_max_scale(k) if signal == "rrf" else min_score


def _passes_gate(
    row: Candidate,
    n: int,
    min_score: float,
    gate: CalibratedGate | None,
    k: int,
    query_empty: bool,
) -> bool:
    if row.is_profile:
        return n >= PROFILE_MIN_POOL
    scored = gate_score(row)
    if scored is None:
        return query_empty or n >= UNSCORED_MIN_POOL
    signal, score = scored
    return score >= gate_threshold(signal, min_score, gate, k)


def quality_gate(
    rows: Sequence[Candidate],
    n: int,
    *,
    deep: bool = False,
    gate: CalibratedGate | None = None,
    k: int = 60,
    query_empty: bool = False,
) -> list[Candidate]:
    """Drop rows below the quality threshold (§3.5), first matching branch per row.

    1. profile: kept iff ``n >= 50``; 2-5. scored rows by :func:`gate_score` precedence
    against :func:`gate_threshold`; 6. unscored rows: kept iff the query is empty (a pure
    recency listing) or ``n >= 100``. ``n`` is memories + episodes in scope; ``deep`` halves
    both the heuristic and a calibrated gate.
    """
    min_score = heuristic_min_score(n, deep=deep)
    if gate is not None and deep:
        gate = replace(gate, threshold=gate.threshold * 0.5)
    return [row for row in rows if _passes_gate(row, n, min_score, gate, k, query_empty)]


def gate_fallback(
    pre_gate: Sequence[Candidate], gated: Sequence[Candidate]
) -> list[Candidate] | None:
    """The ``gate_fallback`` rescue (§3.6), or ``None`` when it does not apply.

    Applies only when the gate dropped every non-profile row and some pre-gate row had its
    cosine backfilled (which only confidence scoring does). The rescue is the backfilled
    rows, plus the profile if it had passed, in confidence order.
    """
    if any(not row.is_profile for row in gated):
        return None
    if not any(row.cosine_backfilled for row in pre_gate):
        return None
    profile_passed = any(row.is_profile for row in gated)
    rescued = [r for r in pre_gate if r.cosine_backfilled or (r.is_profile and profile_passed)]
    return _sorted_desc(rescued, _confidence_of)


def _autocut_signal(rows: Sequence[Candidate]) -> Callable[[Candidate], float | None] | None:
    """What autocut keys on (§3.7), or ``None`` when it must stay inert.

    Rank-fusion gaps encode retriever overlap, not relevance breaks, and a cascade list
    mixes cosine rows with unscored ones, so only similarity-scale lists are cut.
    """
    first = rows[0]
    if first.confidence is not None:
        return _confidence_of
    if first.rsf is not None or first.rrf is not None:
        return None
    if any(row.cosine is None for row in rows):
        return None
    return _cosine_of


def autocut(
    rows: Sequence[Candidate], min_results: int = 3, min_gap_ratio: float = 0.15
) -> list[Candidate]:
    """Cut after the largest adjacent score gap when it is large enough (§3.7).

    Lists shorter than ``max(2, min_results)`` are kept whole. The cut happens only if
    ``max_gap / top_score >= min_gap_ratio`` (relative, so it works on any score scale); a
    missing score counts as 0 and a non-positive top score disables the cut.
    """
    out = list(rows)
    if len(out) < max(2, min_results):
        return out
    signal = _autocut_signal(out)
    if signal is None:
        return out
    scores = [signal(row) or 0.0 for row in out]
    if scores[0] <= 0:
        return out
    gaps = [a - b for a, b in itertools.pairwise(scores)]
    widest = max(gaps)
    if widest / scores[0] < min_gap_ratio:
        return out
    return out[: gaps.index(widest) + 1]


def finalize(rows: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Cut to the first ``limit`` rows, then reverse: the last element is the best (§3.1)."""
    return list(reversed(rows[: max(0, limit)]))


def match_reason(row: Candidate) -> MatchReason | None:
    """Why a row surfaced (§2.2): the gate's signal and score plus the raw signals present.

    ``None`` for an unscored row, so "no signal" stays distinguishable from a zero score.
    """
    scored = gate_score(row)
    if scored is None:
        return None
    reason: MatchReason = {"signal": scored[0], "score": scored[1]}
    if row.cosine is not None:
        reason["cosine"] = row.cosine
    if row.rrf is not None:
        reason["rrf"] = row.rrf
    if row.rsf is not None:
        reason["rsf"] = row.rsf
    return reason


# --- the whole post-retrieval pipeline --------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecallContext:
    """Per-request inputs of the ranking steps that the storage layer supplies.

    ``pool_size`` is memories + episodes in scope (§3.1 step 6); ``episode_boundary`` the
    ``created_at`` of the newest episode in scope; ``span`` the memory time span (only read
    with confidence on); ``gate`` the calibrated gate (``None``: heuristic, or the fused
    gate disabled).
    """

    pool_size: int
    limit: int
    now: datetime
    deep: bool = False
    query_empty: bool = False
    episode_boundary: datetime | None = None
    gate: CalibratedGate | None = None
    span: TimeSpan = NO_SPAN


@dataclass(frozen=True, slots=True)
class Ranked:
    """The ranked answer: ``rows`` best-last (§3.1 step 9), and whether it is a rescue.

    A rescued answer carries ``gate_fallback: true`` and earns no recall-count credit (§3.6,
    §3.9).
    """

    rows: tuple[Candidate, ...]
    gate_fallback: bool = False


def pre_gate(rows: Sequence[Candidate], ctx: RecallContext, t: Tunables) -> list[Candidate]:
    """§3.1 step 5 after backfill: the episode penalty, then confidence scoring."""
    out = list(rows)
    if t.episode_penalty_enabled:
        out = apply_episode_penalty(
            out,
            ctx.episode_boundary,
            rate=t.episode_decay_rate,
            floor=t.episode_decay_floor,
            confidence_enabled=t.confidence_enabled,
        )
    if t.confidence_enabled:
        out = score_confidence(out, now=ctx.now, deep=ctx.deep, span=ctx.span, tunables=t)
    return out


def rank(
    rows: Sequence[Candidate], ctx: RecallContext, tunables: Tunables = DEFAULT_TUNABLES
) -> Ranked:
    """Steps 5 and 7-9 of §3.1 on fused (or cascaded, cosine-backfilled) candidates.

    Penalty and confidence, the quality gate, the ``gate_fallback`` rescue (only possible
    with confidence on), autocut (skipped after a rescue), then the limit cut and reverse.
    """
    t = tunables
    scored = pre_gate(rows, ctx, t)
    gated = quality_gate(
        scored, ctx.pool_size, deep=ctx.deep, gate=ctx.gate, k=t.rrf_k, query_empty=ctx.query_empty
    )
    rescue = gate_fallback(scored, gated) if t.confidence_enabled else None
    if rescue is not None:
        return Ranked(rows=tuple(finalize(rescue, ctx.limit)), gate_fallback=True)
    if t.autocut_enabled:
        gated = autocut(gated, t.autocut_min_results, t.autocut_min_gap_ratio)
    return Ranked(rows=tuple(finalize(gated, ctx.limit)))
