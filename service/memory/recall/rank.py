"""The post-retrieval pipeline after fusion (steps 5-9 of docs/tools.md, "Recall steps"): penalty,
confidence, gate, rescue, autocut (docs/tools.md, "Autocut"), the cut and the final reverse, and
``match_reason``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from service.memory.recall.candidate import (
    DEFAULT_TUNABLES,
    CalibratedGate,
    Candidate,
    MatchReason,
    Tunables,
    confidence_of,
    cosine_of,
)
from service.memory.recall.confidence import score_confidence
from service.memory.recall.gate import gate_fallback, gate_score, quality_gate
from service.memory.recall.penalty import apply_episode_penalty
from service.memory.recall.seats import seated_rows, with_seats
from service.memory.recall.time import NO_SPAN, TimeSpan


def _autocut_signal(rows: Sequence[Candidate]) -> Callable[[Candidate], float | None] | None:
    """What autocut keys on, or ``None`` when it must stay inert.

    Rank-fusion gaps encode retriever overlap, not relevance breaks, and a cascade list
    mixes cosine rows with unscored ones, so only similarity-scale lists are cut.
    """
    first = rows[0]
    if first.confidence is not None:
        return confidence_of
    if first.rsf is not None or first.rrf is not None or first.hybrid is not None:
        return None
    if any(row.cosine is None for row in rows):
        return None
    return cosine_of


def autocut(
    rows: Sequence[Candidate], min_results: int = 3, min_gap_ratio: float = 0.15
) -> list[Candidate]:
    """Cut after the largest adjacent score gap when it is large enough.

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
    """Cut to the first ``limit`` rows, best first (the answer lists them reversed, best
    last: ``service.mcp.render.recall`` does that once, at the boundary)."""
    return list(rows[: max(0, limit)])


def match_reason(row: Candidate) -> MatchReason | None:
    """Why a row surfaced (docs/tools.md, "Recall rows"): the gate's signal and score plus the raw
    signals present.

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
    if row.hybrid is not None:
        reason["hybrid"] = row.hybrid
    return reason


@dataclass(frozen=True, slots=True)
class RecallContext:
    """Per-request inputs of the ranking steps that the storage layer supplies.

    ``pool_size`` is memories + episodes in scope (step 6 of docs/tools.md, "Recall steps");
    ``episode_boundary`` the ``created_at`` of the newest episode in scope; ``span`` the memory time
    span (only read with confidence on); ``gate`` the calibrated gate (``None``: heuristic, or the
    fused gate disabled); ``vector_floor`` the hybrid gate's cosine threshold (``None``: not a
    hybrid recall).
    """

    pool_size: int
    limit: int
    now: datetime
    deep: bool = False
    query_empty: bool = False
    episode_boundary: datetime | None = None
    gate: CalibratedGate | None = None
    span: TimeSpan = NO_SPAN
    vector_floor: float | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """The ranked answer: ``rows`` best first (the wire lists them best last, step 9 of
    docs/tools.md, "Recall steps"), and whether it is a rescue.

    A rescued answer carries ``gate_fallback: true`` and earns no recall-count credit
    (docs/tools.md, "Gate fallback"; docs/tools.md, "Recall statistics").
    """

    rows: tuple[Candidate, ...]
    gate_fallback: bool = False
    admitted: tuple[Candidate, ...] = ()
    """Every row the gate and autocut admitted (or the rescue chose), before the limit
    cut: a time cue may seat one the cut left out (docs/tools.md, "Time cues")."""


def pre_gate(rows: Sequence[Candidate], ctx: RecallContext, t: Tunables) -> list[Candidate]:
    """Step 5 of docs/tools.md, "Recall steps", after backfill: the episode penalty, then confidence
    scoring."""
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
    """Steps 5 and 7-9 (docs/tools.md, "Recall steps") on fused (or cascaded, cosine-backfilled)
    candidates.

    Penalty and confidence, the quality gate, the ``gate_fallback`` rescue (only possible
    with confidence on), autocut (skipped after a rescue), the hybrid recall's vector seats
    (``seats``), then the limit cut.
    """
    t = tunables
    scored = pre_gate(rows, ctx, t)
    gated = quality_gate(
        scored,
        ctx.pool_size,
        deep=ctx.deep,
        gate=ctx.gate,
        k=t.rrf_k,
        query_empty=ctx.query_empty,
        vector_floor=ctx.vector_floor,
    )
    rescue = gate_fallback(scored, gated) if t.confidence_enabled else None
    if rescue is not None:
        return Ranked(tuple(finalize(rescue, ctx.limit)), True, tuple(rescue))
    if t.autocut_enabled:
        gated = autocut(gated, t.autocut_min_results, t.autocut_min_gap_ratio)
    if ctx.vector_floor is not None and not ctx.query_empty and t.vector_seats > 0:
        seated = seated_rows(scored, t.vector_seats, ctx.pool_size, deep=ctx.deep, gate=ctx.gate)
        gated = with_seats(gated, seated, ctx.limit)
    return Ranked(rows=tuple(finalize(gated, ctx.limit)), admitted=tuple(gated))
