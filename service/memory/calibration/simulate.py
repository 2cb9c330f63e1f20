"""The fused gate, calibrated by simulating recalls (docs/tools.md, "calibrate_threshold").

The quality gate (docs/tools.md, "Quality gate") keys on a per-row score that only exists relative
to a query: the confidence score when confidence scoring is on, else the fused rrf / rsf
score. So its null and positive distributions come from simulation: random memories
of the agent serve as pseudo-queries and run through the live mode's retrieval,
fusion and pre-gate scoring at depth 20; each surfacing row whose gate signal is the
active one is labelled positive when it was stored within the temporal window
(±30 min) of the pseudo-query, null otherwise. Separation at the agent's beta over
the two gives one draw; the upper median of several draws wins (one unlucky random
sample cannot hand the threshold to a minor mode).

Why not call :func:`service.memory.recall.recall`: its answer is already gated (and
autocut), so rows below the current gate never reach the sample and every
recalibration could only move the gate up; and ``deep`` would switch off the time
decay that the runtime confidence score applies. The simulation therefore stops
right before the gate, reusing the same storage query (``db.recall``) and the same
pure ranking steps as the live pipeline: ``scoring.fuse``, ``scoring.scoring_context`` and
``rank.pre_gate`` (the episode penalty and confidence scoring). A pseudo-query's
stored vector is the embedding of its content, so no embedding call is made; scores of
one pseudo-query are computed once per calibration and reused across draws.

Cascade with confidence off has no fused score, hence no fused gate (the vector
threshold owns precision there); neither has the default hybrid mode, whose gate keeps
every lexical match and the vector rows at or above the (calibrated) vector threshold;
without an embedding provider the live pipeline has no vector channel, so nothing is
calibrated either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from service.config import Settings
from service.db import calibration as calibration_queries, recall as recall_queries
from service.db.pool import Connection
from service.memory.calibration import stats
from service.memory.library import Library
from service.memory.recall import (
    candidate,
    confidence,
    fusion,
    gate,
    passage_gain,
    query_terms,
    rank,
    scoring,
    time,
)
from service.memory.recall.hits import channels_from, stored_cosines
from service.memory.recall.scoring import tunables
from service.models import TenantId

DEPTH = 20
"""Rows each pseudo-query retrieves (the recall ``limit`` of the simulation)."""


def gate_signal(settings: Settings) -> candidate.Signal | None:
    """The signal the gate keys on in this configuration, None when there is no fused gate."""
    if settings.confidence_enabled:
        return "confidence"
    if settings.recall_mode == "rrf":
        return "rrf"
    if settings.recall_mode == "rsf":
        return "rsf"
    return None


def gate_floor(settings: Settings, signal: candidate.Signal) -> float:
    """The calibration floor on the signal's own scale.

    rrf scores live on ``[0, 3/(K+1)]`` (about 0.049), so the 0.05 floor of the
    similarity scale is scaled by ``3/(K+1)`` there; left unscaled it would sit above
    every rrf score and the gate would drop every rrf-scored row.
    """
    if signal == "rrf":
        return settings.calibrate_floor * fusion.rrf_max_scale(settings.rrf_k)
    return settings.calibrate_floor


@dataclass(frozen=True, slots=True)
class _Scores:
    null: list[float]
    positives: list[float]


def _label(
    rows: Sequence[candidate.Candidate],
    query: calibration_queries.PseudoQuery,
    signal: candidate.Signal,
    window: timedelta,
) -> _Scores:
    """Gate scores of the active signal, split by temporal adjacency to the pseudo-query."""
    scores = _Scores([], [])
    for row in rows:
        if row.is_profile or (row.kind == "mem" and row.id == query.id):
            continue
        scored = gate.gate_score(row)
        if scored is None or scored[0] != signal:
            continue
        moment = time.parse_timestamp(row.timestamp)
        near = moment is not None and abs(moment - query.timestamp_at) <= window
        (scores.positives if near else scores.null).append(scored[1])
    return scores


async def _simulate(
    lib: Library,
    conn: Connection,
    tenant_id: TenantId,
    agent: str,
    query: calibration_queries.PseudoQuery,
    vector_threshold: float,
) -> list[candidate.Candidate]:
    """One pseudo-query through retrieval, fusion and pre-gate scoring (no gate, no cut)."""
    s = lib.settings
    mode = fusion.recall_mode(s.recall_mode, query.content)
    terms = query_terms.build(query.content, s.recall_max_terms, s.recall_max_patterns)
    fts = s.fts_enabled or mode == "cascade"
    wanted = recall_queries.Retrieval(
        vector=query.embedding,
        tsquery=terms.tsquery if fts else None,
        lexemes=terms.lexemes if fts else (),
        patterns=terms.patterns if fts else (),
        limit=DEPTH,
        episodes=True,
        recency=False,
        confidence=s.confidence_enabled,
        passages=s.passages_enabled,
    )
    scope = recall_queries.Scope(agent, None, "", None)
    found = await recall_queries.recall_candidates(conn, tenant_id, scope, wanted)
    hits = passage_gain.neutral(found.hits, s.passage_spread)  # as recall scores them
    floor = fusion.vector_min_similarity(vector_threshold, mode, s.rrf_threshold_factor)
    pool = channels_from(hits, (), floor, DEPTH)
    fused = scoring.fuse(mode, pool, [], s.rrf_k, DEPTH)
    # rows found by words alone get their stored cosine (docs/tools.md, "Confidence scoring")
    if s.confidence_enabled:
        fused = confidence.backfill_cosines(fused, stored_cosines(hits))
    context = scoring.scoring_context(
        lib, found.meta, mode, limit=DEPTH, deep=False, query_empty=False
    )
    return rank.pre_gate(fused, context, tunables(lib))


async def calibrate_gate(
    lib: Library, tenant_id: TenantId, agent: str, dim: int, beta: float, vector_threshold: float
) -> stats.FusedGate | None:
    """The agent's fused gate (``fused_gate`` of docs/tools.md, "calibrate_threshold"), or
    None when there is nothing to calibrate or too little data (the heuristic gate then stays in
    charge).

    ``dim`` is the width of the pseudo-queries' vectors (the provider's), ``beta`` the
    agent's precision, ``vector_threshold`` the similarity floor the live vector
    retriever will apply (the one just calibrated).
    """
    s = lib.settings
    signal = gate_signal(s)
    if signal is None or lib.embedder is None:
        return None
    window = timedelta(minutes=s.calibrate_temporal_window_min)
    memo: dict[int, _Scores] = {}
    draws: list[stats.FusedGate] = []
    async with lib.db.tenant_tx(tenant_id) as conn:
        for _ in range(s.fused_gate_calibration_draws):
            queries = await calibration_queries.calibration_pseudo_queries(
                conn, tenant_id, agent, dim, s.fused_gate_sample_queries
            )
            for query in queries:
                if query.id not in memo:
                    rows = await _simulate(lib, conn, tenant_id, agent, query, vector_threshold)
                    memo[query.id] = _label(rows, query, signal, window)
            null = [x for q in queries for x in memo[q.id].null]
            positives = [x for q in queries for x in memo[q.id].positives]
            draw = stats.gate_draw(
                null,
                positives,
                signal=signal,
                beta=beta,
                floor=gate_floor(s, signal),
                queries_run=len(queries),
            )
            if draw is not None:
                draws.append(draw)
    return stats.upper_median(draws)
