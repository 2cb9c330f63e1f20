"""The ranking half of a recall: the retrieved rows fused, gated and ranked into recalled rows.

Pure apart from the settings: the default ``hybrid`` mode fuses scores (``fusion``),
reorders the head (``rerank``) and gates on matches (``gate``); the other modes stay
selectable (``CPERSONA_RECALL_MODE``). What ranking needs from the database comes from the
lexical statement's meta row (pool size, boundary, calibration, time span).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime

from service.db import recall as recall_queries
from service.db.sql import VECTOR_DIMS
from service.memory.library import Library
from service.memory.recall import (
    candidate,
    confidence,
    exclusion,
    fusion,
    gate,
    rank,
    rerank,
    time,
)
from service.memory.recall.hits import (
    Pool,
    channels_from,
    message,
    profile_candidate,
    stored_cosines,
    text_features,
)
from service.memory.recall.records import Recalled
from service.memory.recall.request import RecallRequest
from service.memory.recall.retrieve import depth_of
from service.models import JsonObject


def tunables(lib: Library) -> candidate.Tunables:
    s = lib.settings
    return candidate.Tunables(
        rrf_k=s.rrf_k,
        rrf_threshold_factor=s.rrf_threshold_factor,
        episode_penalty_enabled=s.episode_penalty_enabled,
        episode_decay_rate=s.episode_decay_rate,
        episode_decay_floor=s.episode_decay_floor,
        autocut_enabled=s.autocut_enabled,
        autocut_min_results=s.autocut_min_results,
        autocut_min_gap_ratio=s.autocut_min_gap_ratio,
        confidence_enabled=s.confidence_enabled,
        vector_seats=s.hybrid_vector_seats,
    )


def _gate(lib: Library, meta: JsonObject, mode: candidate.Mode) -> candidate.CalibratedGate | None:
    if not lib.settings.fused_gate_enabled:
        return None
    for prefix in ("agent", "tenant"):
        threshold, signal = meta.get(f"{prefix}_gate"), meta.get(f"{prefix}_gate_signal")
        if threshold is not None and signal in ("rrf", "rsf", "confidence", "cosine"):
            return candidate.CalibratedGate(float(threshold), signal)
    return None


def _min_similarity(lib: Library, meta: JsonObject, mode: candidate.Mode) -> float:
    base = _vector_threshold(lib, meta)
    return fusion.vector_min_similarity(base, mode, lib.settings.rrf_threshold_factor)


def fuse(
    mode: candidate.Mode,
    pool: Pool,
    profiles: list[candidate.Candidate],
    k: int,
    limit: int,
    lexical_weight: float = 0.5,
    cosines: dict[candidate.Identity, float] | None = None,
) -> list[candidate.Candidate]:
    """Fuse the channels the configured way (docs/tools.md, "Fusion modes"); profiles are appended.

    ``lexical_weight`` is the text channels' weight (hybrid, rsf); ``cosines`` the stored
    cosines hybrid fusion gives rows found by words alone."""
    if mode == "hybrid":
        return fusion.fuse_hybrid(
            pool.vector,
            [pool.episode_text, pool.keyword],
            cosines=cosines,
            profiles=profiles,
            lexical_weight=lexical_weight,
        )
    if mode == "rrf":
        return fusion.fuse_rrf([pool.vector, pool.episode_text, pool.keyword], k, profiles=profiles)
    if mode == "rsf":
        return fusion.fuse_rsf(
            pool.vector,
            [pool.episode_text, pool.keyword],
            profiles=profiles,
            lexical_weight=lexical_weight,
        )
    return fusion.cascade(pool.vector, pool.episode_text, profiles, pool.keyword, limit)


def vector_unseen(
    lib: Library, hits: Sequence[recall_queries.Hit], vector: list[float] | None
) -> set[candidate.Identity]:
    """Rows matched lexically that the vector channel could not score although embeddings
    are on: no vector of the query's width (the retrieval reports no cosine for them),
    or no usable query vector at all. The LIKE fallback reports no cosine, so its rows
    count only when the query has no usable vector."""
    if lib.embedder is None:
        return set()
    searched = vector is not None and len(vector) in VECTOR_DIMS
    unseen: set[candidate.Identity] = set()
    for hit in hits:
        text_hit = hit.channel in ("memory_text", "episode_text") and hit.cosine is None
        if text_hit or (hit.channel == "keyword" and not searched):
            unseen.add(("ep" if hit.kind == "ep" else "mem", hit.id))
    return unseen


def _boundary(meta: JsonObject) -> datetime | None:
    value = meta.get("boundary")
    return time.parse_timestamp(value) if isinstance(value, str) else None


def _span(meta: JsonObject, now: datetime) -> time.TimeSpan:
    oldest, newest = meta.get("span_oldest"), meta.get("span_newest")
    if not isinstance(oldest, str) or not isinstance(newest, str):
        return time.NO_SPAN
    return time.time_span(time.parse_timestamp(oldest), time.parse_timestamp(newest), now)


def scoring_context(
    lib: Library,
    meta: JsonObject,
    mode: candidate.Mode,
    *,
    limit: int,
    deep: bool,
    query_empty: bool,
) -> rank.RecallContext:
    """What ranking needs from the retrieval's meta row: pool, boundary, gate, span."""
    now = datetime.now(UTC)
    return rank.RecallContext(
        pool_size=int(meta.get("pool") or 0),
        limit=limit,
        now=now,
        deep=deep,
        query_empty=query_empty,
        episode_boundary=_boundary(meta),
        gate=_gate(lib, meta, mode),
        span=_span(meta, now) if lib.settings.confidence_enabled else time.NO_SPAN,
        vector_floor=_vector_threshold(lib, meta) if mode == "hybrid" else None,
    )


def _vector_threshold(lib: Library, meta: JsonObject) -> float:
    """The agent's (else the tenant's) calibrated vector threshold, else the setting."""
    threshold = meta.get("agent_threshold") or meta.get("tenant_threshold")
    return float(threshold) if threshold is not None else lib.settings.vector_min_similarity


def cue_floor(lib: Library, meta: JsonObject) -> float:
    """The cosine floor of a time cue's vector list: the vector threshold times
    ``CPERSONA_RRF_THRESHOLD_FACTOR`` (docs/tools.md, "Time cues")."""
    return _vector_threshold(lib, meta) * lib.settings.rrf_threshold_factor


def _confidence(
    lib: Library, row: candidate.Candidate, ctx: rank.RecallContext
) -> confidence.Confidence | None:
    if not lib.settings.confidence_enabled:
        return None
    return confidence.confidence_score(
        row, now=ctx.now, deep=ctx.deep, span=ctx.span, tunables=tunables(lib)
    )


def _credited(lib: Library, req: RecallRequest, ranked: rank.Ranked) -> list[int]:
    """Memory ids whose recall statistics this recall bumps (docs/tools.md, "Recall statistics")."""
    if not lib.settings.confidence_enabled or req.deep or req.paused or ranked.gate_fallback:
        return []
    return [row.id for row in ranked.rows if row.kind == "mem" and row.id > 0]


@dataclasses.dataclass(frozen=True, slots=True)
class RankedRows:
    """What ranking made of the hits: the rows best first, whether the gate's rescue
    chose them, the memory ids whose recall statistics this recall credits, every row
    an ordinary arm reached (``reached``) and those the gate and autocut admitted before
    the ``limit`` cut (``admitted``; a time cue's seats read both)."""

    rows: tuple[Recalled, ...]
    gate_fallback: bool
    credited: list[int]
    reached: frozenset[candidate.Identity] = frozenset()
    admitted: frozenset[candidate.Identity] = frozenset()


def ranked_body(
    lib: Library,
    req: RecallRequest,
    meta: JsonObject,
    hits: list[recall_queries.Hit],
    mode: candidate.Mode,
    limit: int,
    unseen: set[candidate.Identity],
) -> RankedRows:
    """Fuse, rerank, gate and rank the hits into recalled rows, best first."""
    s = lib.settings
    exclusions = exclusion.normalise_exclusions(req.exclude_contents)
    pool = channels_from(
        hits, exclusions, _min_similarity(lib, meta, mode), depth_of(lib, limit, mode)
    )
    profile = meta.get("profile")
    profiles = [profile_candidate(profile)] if isinstance(profile, str) and profile else []
    if mode == "hybrid":
        fused = fuse(
            mode, pool, profiles, s.rrf_k, limit, s.hybrid_lexical_weight, stored_cosines(hits)
        )
        fused = rerank.rerank(fused, text_features(hits), req.query, depth=s.rerank_depth)
    else:
        fused = fuse(mode, pool, profiles, s.rrf_k, limit, s.rsf_lexical_weight)
    fused = gate.mark_vector_unseen(fused, unseen)
    if lib.settings.confidence_enabled:
        fused = confidence.backfill_cosines(fused, stored_cosines(hits))
    context = scoring_context(
        lib, meta, mode, limit=limit, deep=req.deep, query_empty=not req.query.strip()
    )
    ranked = rank.rank(fused, context, tunables(lib))
    rows = tuple(message(row, pool.rows, _confidence(lib, row, context)) for row in ranked.rows)
    credited = _credited(lib, req, ranked)
    if req.time_cue is None:
        return RankedRows(rows, ranked.gate_fallback, credited)
    reached = frozenset(row.identity for row in fused)
    admitted = frozenset(row.identity for row in ranked.admitted)
    return RankedRows(rows, ranked.gate_fallback, credited, reached, admitted)
