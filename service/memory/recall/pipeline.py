"""The recall pipeline (spec §3): retrieve in SQL, rank in pure functions, build messages.

Retrieval is two statements (``db.recall``). The lexical one (full text, the pool
size, the episode boundary, the profile, the calibrated gate) needs no query vector, so
it runs while the query is being embedded; the vector one then adds the nearest rows
and the lexical hits' stored cosines, in the same transaction when the vector is
already there, else in one of its own (no connection waits on an embedder). The LIKE
fallback costs a round trip more only when full text found nothing. Ranking is the
pure modules of this package: the default ``hybrid`` mode fuses scores (``fusion``),
reorders the head (``rerank``) and gates on matches (``gate``); the spec's rrf, rsf and
cascade stay selectable (``CPERSONA_RECALL_MODE``). The library returns full content:
previews and budgets belong to the MCP boundary.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from service.db import recall as store
from service.db.pool import Connection
from service.db.sql import VECTOR_DIMS
from service.memory import bounds
from service.memory.embeddings.base import EmbeddingError
from service.memory.embeddings.batcher import EmbeddingBatcher
from service.memory.embeddings.cache import embed_query
from service.memory.library import Library
from service.memory.memories.listing import clamp
from service.memory.recall import (
    advisory,
    candidate,
    confidence,
    exclusion,
    fusion,
    gate,
    query_terms,
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
from service.models import JsonObject, TenantId

DEFAULT_LIMIT = 10
"""Rows a recall returns when the caller names no ``limit`` (spec §2.1)."""
HYBRID_DEPTH = 100
"""Lexical candidates of a hybrid recall when ``CPERSONA_RECALL_DEPTH`` is 0: deep enough
that ``limit`` (at most 100) never changes which rows compete."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecallRequest:
    agent_id: str
    query: str
    limit: int = DEFAULT_LIMIT
    deep: bool = False
    channel: str = ""
    exclude_contents: Sequence[object] = ()
    project_id: str | None = None
    source_id: str = ""
    paused: bool = False


def check_request(req: RecallRequest) -> None:
    """Refuse (InvalidInput) a request over its documented bounds: the query and each
    excluded text at ``bounds.QUERY_CHARS``, at most ``bounds.LIST_ITEMS`` exclusions, the
    names at ``bounds.IDENTIFIER_CHARS``. The schema says the same; the library checks it
    again because it trusts no boundary, and an unbounded query costs every tenant (full
    text, the LIKE fallback and the embedder all scale with it)."""
    bounds.check_text("query", req.query, bounds.QUERY_CHARS)
    bounds.check_texts("exclude_contents", req.exclude_contents, bounds.QUERY_CHARS)
    for field, value in (
        ("agent_id", req.agent_id),
        ("project_id", req.project_id),
        ("channel", req.channel),
        ("source_id", req.source_id),
    ):
        bounds.check_text(field, value, bounds.IDENTIFIER_CHARS)


class _InFlight:
    """How many recalls this process is running (a context manager counts one)."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(self, *_: object) -> None:
        self.count -= 1


RUNNING = _InFlight()
"""This process's recalls in flight: with company, the process is loaded and the lexical
half does not overlap the embedding (``_retrieve``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Embedded:
    vector: list[float] | None
    failed: bool


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
    )


async def _embed(lib: Library, tenant_id: TenantId, query: str) -> _Embedded:
    """The query's vector within CPERSONA_EMBEDDING_QUERY_TIMEOUT_SECS (1 s), through the
    provider's circuit breaker, failures accounted to ``tenant_id``; a failure (or an open
    breaker) means lexical-only recall with the ``fault`` advisory, never a slow answer."""
    if lib.embedder is None or not query.strip():
        return _Embedded(None, False)
    within = lib.settings.embedding_query_timeout_secs
    cache, tenant = lib.query_cache, str(tenant_id)
    try:
        vector = await embed_query(lib.embedder, lib.breaker, cache, query, within, tenant=tenant)
    except EmbeddingError:
        return _Embedded(None, True)
    return _Embedded(vector, False)


def _scope(req: RecallRequest) -> store.Scope:
    pattern = query_terms.like_pattern(req.source_id)[1:] if req.source_id else None
    return store.Scope(req.agent_id, req.project_id, req.channel, pattern)


def depth_of(lib: Library, limit: int, mode: candidate.Mode) -> int:
    """Rows per retriever: ``CPERSONA_RECALL_DEPTH``, or the mode's own when it is 0 (hybrid
    ``HYBRID_DEPTH``, the spec's modes ``limit``), never below ``limit``."""
    configured = lib.settings.recall_depth or (HYBRID_DEPTH if mode == "hybrid" else 0)
    return max(limit, configured)


def _retrieval(
    lib: Library,
    req: RecallRequest,
    depth: int,
    terms: query_terms.Terms,
    mode: candidate.Mode,
) -> store.Retrieval:
    """What to retrieve, without the query vector (the embedding runs alongside the
    lexical half; the vector half gets the vector once it is there).

    The hybrid vector channel is ``CPERSONA_RECALL_VECTOR_DEPTH`` deep whatever the
    ``limit`` (a small LIMIT keeps Postgres on the HNSW index at scale, and ``limit`` never
    changes the candidates); the spec's modes take ``depth`` rows from every retriever."""
    s = lib.settings
    fts = s.fts_enabled or mode == "cascade"
    return store.Retrieval(
        vector=None,
        tsquery=terms.tsquery if fts else None,
        lexemes=terms.lexemes if fts else (),
        patterns=terms.patterns if fts else (),
        limit=depth,
        episodes=not (req.source_id and not req.channel),
        recency=not req.query.strip(),
        confidence=s.confidence_enabled,
        vector_depth=min(depth, s.recall_vector_depth) if mode == "hybrid" else None,
        query=req.query,
        budget=s.recall_postings_budget,
        english_weight=s.lexical_english_weight,
    )


async def _keyword_fallback(
    conn: Connection, tenant_id: TenantId, req: RecallRequest, scope: store.Scope, limit: int
) -> list[store.Hit]:
    """The literal substring match of the whole query (spec §3.2 LIKE fallback)."""
    fetch = min(10_000, max(5 * limit, 50))
    pattern = query_terms.like_pattern(req.query.strip())
    await store.plan_each_statement(conn)  # after a recall statement's generic plan
    rows = await store.like_fallback(conn, tenant_id, scope, pattern, fetch)
    return rows[:limit]


async def _advisory(
    lib: Library, tenant_id: TenantId, meta: JsonObject, embedded: _Embedded
) -> JsonObject | None:
    """The degraded advisory for this recall, recording state changes (spec §3.10)."""
    severity: advisory.Severity | None = None
    if lib.embedder is None:
        severity = "hint"
    elif embedded.failed:
        severity = "fault"
    if severity is None:
        if meta.get("advisory_state") not in (None, "healthy"):
            await _note_advisory(lib, tenant_id, "healthy", False)
        return None
    if not lib.settings.degraded_advisory:
        return None
    first = not meta.get("advisory_long_sent") or meta.get("advisory_state") == "healthy"
    if first or meta.get("advisory_state") != severity:
        first = not await _note_advisory(lib, tenant_id, severity, True) or first
    return advisory.advisory(severity, long_form=first)


async def _note_advisory(lib: Library, tenant_id: TenantId, state: str, long_form: bool) -> bool:
    """Record a change of advisory state, in a transaction of its own on the primary
    (a recall may read a replica, which takes no writes; changes are rare)."""
    async with lib.write_db.tenant_tx(tenant_id) as conn:
        return await store.note_advisory(conn, tenant_id, state, long_form)


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
    """Fuse the channels the configured way (spec §3.3); profiles are appended.

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


def _vector_unseen(
    lib: Library, hits: Sequence[store.Hit], vector: list[float] | None
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


async def recall(lib: Library, tenant_id: TenantId, req: RecallRequest) -> JsonObject:
    """Hybrid recall for one agent: messages in ascending strength (last = best);
    InvalidInput for a request over its bounds (``check_request``)."""
    check_request(req)
    limit = clamp(req.limit, 0, lib.settings.max_memories)
    mode = fusion.recall_mode(lib.settings.recall_mode, req.query)
    depth = depth_of(lib, limit, mode) if limit else 0
    scope = _scope(req)
    wanted = _retrieval(lib, req, depth, query_terms.build(req.query), mode)
    with RUNNING:
        embedded, found, fallback = await _retrieve(lib, tenant_id, req, scope, wanted, limit, mode)
    hits = found.hits + fallback
    notice = await _advisory(lib, tenant_id, found.meta, embedded)
    body: JsonObject = {"messages": []}
    if limit:
        unseen = _vector_unseen(lib, hits, embedded.vector)
        body, credited = _ranked_body(lib, req, found.meta, hits, mode, limit, unseen)
        if credited:
            async with lib.db.tenant_tx(tenant_id) as conn:
                await store.bump_recall_stats(conn, tenant_id, credited)
    if notice is not None:
        body["advisory"] = notice
    return body


async def _retrieve(
    lib: Library,
    tenant_id: TenantId,
    req: RecallRequest,
    scope: store.Scope,
    wanted: store.Retrieval,
    limit: int,
    mode: candidate.Mode,
) -> tuple[_Embedded, store.Candidates, list[store.Hit]]:
    """The query's embedding, the lexical half and the vector half.

    When the process is otherwise idle, the lexical statement runs while the model
    works (the model's time is hidden behind it). If the vector is there when it ends (a lone
    recall: the statement takes longer than the model), the vector half runs in the
    same transaction; otherwise the transaction ends first and the vector half gets one
    of its own, so no pooled connection waits on an embedder (a slow provider, a queue
    behind an import batch). When other recalls are running or the embedder is busy,
    the process is loaded: overlapping hides nothing there and cost 8 clients 6-15 % of
    their throughput, so the query is embedded first and one transaction runs both
    halves. A failed lexical half cancels the embedding; a recall of
    ``limit`` 0 embeds nothing."""
    busy = RUNNING.count > 1 or _embedder_busy(lib)
    embedding = asyncio.ensure_future(_embed(lib, tenant_id, req.query if limit else ""))
    try:
        if busy:  # loaded: the vector first, then one transaction for both halves
            await asyncio.wait([embedding])
        async with lib.db.tenant_tx(tenant_id, generic_plans=store.plan_reusable(scope)) as conn:
            lexical = await store.lexical_candidates(conn, tenant_id, scope, wanted)
            fallback = await _fallback(lib, conn, tenant_id, req, scope, lexical, limit, mode)
            if embedding.done():
                embedded = embedding.result()
                vectors = dataclasses.replace(wanted, vector=embedded.vector)
                found = await store.with_vectors(conn, tenant_id, scope, vectors, lexical)
                return embedded, found, fallback
    except BaseException:
        embedding.cancel()
        await asyncio.gather(embedding, return_exceptions=True)
        raise
    embedded = await embedding
    vectors = dataclasses.replace(wanted, vector=embedded.vector)
    return embedded, await _with_vectors(lib, tenant_id, scope, vectors, lexical), fallback


def _embedder_busy(lib: Library) -> bool:
    """Whether this process's embedding batcher is already working for other callers."""
    return isinstance(lib.embedder, EmbeddingBatcher) and lib.embedder.busy


async def _fallback(
    lib: Library,
    conn: Connection,
    tenant_id: TenantId,
    req: RecallRequest,
    scope: store.Scope,
    lexical: store.Lexical,
    limit: int,
    mode: candidate.Mode,
) -> list[store.Hit]:
    """The LIKE fallback's rows when full text found nothing (else none)."""
    keyword_on = lib.settings.fts_enabled or mode == "cascade"
    if limit and req.query.strip() and not lexical.found_by("memory_text") and keyword_on:
        return await _keyword_fallback(conn, tenant_id, req, scope, limit)
    return []


async def _with_vectors(
    lib: Library,
    tenant_id: TenantId,
    scope: store.Scope,
    wanted: store.Retrieval,
    lexical: store.Lexical,
) -> store.Candidates:
    """The vector half, in a transaction of its own; none without a searchable vector."""
    if not store.searches_vectors(wanted):
        return lexical.alone()
    async with lib.db.tenant_tx(tenant_id, generic_plans=store.plan_reusable(scope)) as conn:
        return await store.with_vectors(conn, tenant_id, scope, wanted, lexical)


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


def _confidence(
    lib: Library, row: candidate.Candidate, ctx: rank.RecallContext
) -> dict[str, Any] | None:
    if not lib.settings.confidence_enabled:
        return None
    score = confidence.confidence_score(
        row, now=ctx.now, deep=ctx.deep, span=ctx.span, tunables=tunables(lib)
    )
    return dict(score.as_dict())


def _credited(lib: Library, req: RecallRequest, ranked: rank.Ranked) -> list[int]:
    """Memory ids whose recall statistics this recall bumps (spec §3.9)."""
    if not lib.settings.confidence_enabled or req.deep or req.paused or ranked.gate_fallback:
        return []
    return [row.id for row in ranked.rows if row.kind == "mem" and row.id > 0]


def _ranked_body(
    lib: Library,
    req: RecallRequest,
    meta: JsonObject,
    hits: list[store.Hit],
    mode: candidate.Mode,
    limit: int,
    unseen: set[candidate.Identity],
) -> tuple[JsonObject, list[int]]:
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
    messages = [message(row, pool.rows, _confidence(lib, row, context)) for row in ranked.rows]
    body: JsonObject = {"messages": messages}
    if ranked.gate_fallback:
        body["gate_fallback"] = True
    return body, _credited(lib, req, ranked)
