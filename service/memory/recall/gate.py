"""The quality gate (docs/tools.md, "Quality gate") and the ``gate_fallback`` rescue
(docs/tools.md, "Gate fallback").

The default ``hybrid`` mode gates what is weak, not what is alone: a row that shares a
word, stem or substring pattern with the query (``Candidate.matched``) always passes, and
a row found by meaning alone passes when its raw cosine reaches the vector threshold (the
calibrated one, else ``CPERSONA_VECTOR_MIN_SIMILARITY``; halved by ``deep``). So an answer
is never emptied while it holds a lexical or an above-threshold vector match, whatever the
pool size (the spec's pool-size heuristic dropped a lone exact match in a small pool and a
paraphrase at cosine 0.37). The spec's modes keep the spec's gate, with one rule on top:
a row matched lexically that the vector channel could
not score while embeddings are on (``Candidate.vector_unseen``: it has no vector yet,
e.g. stored during an embedder outage, or the query could not be embedded) is never
dropped by the gate. The gate's thresholds assume every channel could vote for a row
(rrf's scale is three channels, ``3/(K+1)``); such a row lost the vector channel's vote
to a missing embedding, not to irrelevance, so in a small pool even an exact-content
match would fall under the threshold. With embeddings off (mode ``none``) nothing is
marked and the spec's gate applies unchanged (a lone FTS match in a tiny pool is
dropped; docs/tools.md, "Quality gate").
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import replace

from service.memory.recall.candidate import (
    PROFILE_MIN_POOL,
    UNSCORED_MIN_POOL,
    CalibratedGate,
    Candidate,
    Identity,
    Signal,
    confidence_of,
    evolve,
    sorted_desc,
)
from service.memory.recall.fusion import rrf_max_scale


def heuristic_min_score(n: int, *, deep: bool = False) -> float:
    """The pool-size heuristic gate threshold, halved for ``deep``.

    ``0.5`` for an empty pool, else ``round(0.5 - 0.3 * min(1, ln(n+1)/ln 500), 4)``: tiny
    pools are strict (0.5), from 499 rows on it bottoms out at 0.2.
    """
    base = 0.5 if n <= 0 else round(0.5 - 0.3 * min(1.0, math.log(n + 1) / math.log(500)), 4)
    return base * 0.5 if deep else base


def gate_score(row: Candidate) -> tuple[Signal, float] | None:
    """The signal and score the gate keys on: confidence > hybrid > rsf > cosine > rrf.

    ``None`` for an unscored row. The same precedence names ``match_reason.signal``
    (docs/tools.md, "Recall rows") and is what gate calibration must measure
    (docs/tools.md, "calibrate_threshold").
    """
    if row.confidence is not None:
        return "confidence", row.confidence
    if row.hybrid is not None:
        return "hybrid", row.hybrid
    if row.rsf is not None:
        return "rsf", row.rsf
    if row.cosine is not None:
        return "cosine", row.cosine
    if row.rrf is not None:
        return "rrf", row.rrf
    return None


def gate_threshold(signal: Signal, min_score: float, gate: CalibratedGate | None, k: int) -> float:
    """Threshold for one branch: the calibrated gate if it is for this signal, else the
    heuristic, rescaled to the rrf scale (times ``3/(K+1)``) on the rrf branch."""
    if gate is not None and gate.signal == signal:
        return gate.threshold
    return min_score * rrf_max_scale(k) if signal == "rrf" else min_score


def passes_hybrid_gate(row: Candidate, vector_floor: float) -> bool:
    """The hybrid rule: a lexical match, or a cosine at or above ``vector_floor``."""
    return row.matched or (row.cosine is not None and row.cosine >= vector_floor)


def _passes_gate(
    row: Candidate,
    n: int,
    min_score: float,
    gate: CalibratedGate | None,
    k: int,
    query_empty: bool,
    vector_floor: float | None,
) -> bool:
    if row.is_profile:
        return n >= PROFILE_MIN_POOL
    if row.vector_unseen:
        return True
    if vector_floor is not None and row.hybrid is not None and row.confidence is None:
        return passes_hybrid_gate(row, vector_floor)
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
    vector_floor: float | None = None,
) -> list[Candidate]:
    """Drop rows below the quality threshold, first matching branch per row.

    1. profile: kept iff ``n >= 50``; then rows marked ``vector_unseen`` are kept (see the
    module docstring); hybrid rows (``vector_floor`` given): the hybrid rule (module
    docstring); 2-5. scored rows by :func:`gate_score` precedence against
    :func:`gate_threshold`; 6. unscored rows: kept iff the query is empty (a pure recency
    listing) or ``n >= 100``. ``n`` is memories + episodes in scope; ``deep`` halves the
    heuristic, a calibrated gate and the hybrid vector floor.
    """
    min_score = heuristic_min_score(n, deep=deep)
    if gate is not None and deep:
        gate = replace(gate, threshold=gate.threshold * 0.5)
    floor = None if vector_floor is None else vector_floor * (0.5 if deep else 1.0)
    return [row for row in rows if _passes_gate(row, n, min_score, gate, k, query_empty, floor)]


def mark_vector_unseen(rows: Sequence[Candidate], unseen: Collection[Identity]) -> list[Candidate]:
    """``rows`` with ``vector_unseen`` set on the identities in ``unseen``."""
    return [evolve(row, vector_unseen=True) if row.identity in unseen else row for row in rows]


def gate_fallback(
    pre_gate: Sequence[Candidate], gated: Sequence[Candidate]
) -> list[Candidate] | None:
    """The ``gate_fallback`` rescue, or ``None`` when it does not apply.

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
    return sorted_desc(rescued, confidence_of)
