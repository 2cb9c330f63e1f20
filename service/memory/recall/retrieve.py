"""The retrieval half of a recall: the query's embedding and the two statements.

The lexical statement (full text, the pool size, the episode boundary, the profile, the
calibrated gate) needs no query vector, so it runs while the query is being embedded;
the vector statement then adds the nearest rows and the lexical hits' stored cosines, in
the same transaction when the vector is already there, else in one of its own (no
connection waits on an embedder). The LIKE fallback costs a round trip more only when
full text found nothing (docs/architecture.md, "Recall").
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from service.db import recall as recall_queries, recall_side
from service.db.pool import Connection
from service.embeddings.base import EmbeddingError
from service.embeddings.batcher import EmbeddingBatcher
from service.embeddings.cache import embed_query
from service.memory.library import Library
from service.memory.recall import candidate, passage_gain, query_terms
from service.memory.recall.cue import needs_span
from service.memory.recall.request import RecallRequest
from service.models import TenantId

FALLBACK_CHARS = 256
"""The LIKE fallback matches the query's first this many characters: a substring pattern of
a 16,000-character query makes the trigram index look up thousands of trigrams for a match
no stored text can hold more often than its prefix does (docs/reliability.md, "Fair shares
of the database (hardening round three)")."""

HYBRID_DEPTH = 100
"""Lexical candidates of a hybrid recall when ``CPERSONA_RECALL_DEPTH`` is 0: deep enough
that ``limit`` (at most 100) never changes which rows compete."""


class _InFlight:
    """How many recalls this process is running (a context manager counts one)."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(self, *_: object) -> None:
        self.count -= 1


VECTOR_HOLD_SECS = 0.02
"""How long a lone recall's lexical transaction waits for the query vector before it
commits without it (docs/reliability.md, "The fixed cost of a call"). A second transaction
costs three round trips (``BEGIN``, the tenant setup, ``COMMIT``: 4-8 ms on the loaded
2-core host, docs/benchmarks/latency.md), more than the local model's usual remainder
when the statement ends first; a slow provider holds the connection at most this long,
and only in an idle process (a loaded one embeds first and never holds)."""

RUNNING = _InFlight()
"""This process's recalls in flight: with company, the process is loaded and the lexical
half does not overlap the embedding (``retrieve``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Embedded:
    vector: list[float] | None
    failed: bool


async def _embed(lib: Library, tenant_id: TenantId, query: str) -> Embedded:
    """The query's vector within CPERSONA_EMBEDDING_QUERY_TIMEOUT_SECS (1 s), through the
    provider's circuit breaker, failures accounted to ``tenant_id``; a failure (or an open
    breaker) means lexical-only recall with the ``fault`` advisory, never a slow answer."""
    if lib.embedder is None or not query.strip():
        return Embedded(None, False)
    within = lib.settings.embedding_query_timeout_secs
    cache, tenant = lib.query_cache, str(tenant_id)
    try:
        vector = await embed_query(lib.embedder, lib.breaker, cache, query, within, tenant=tenant)
    except EmbeddingError:
        return Embedded(None, True)
    return Embedded(vector, False)


def scope_of(req: RecallRequest, as_of: datetime | None = None) -> recall_queries.Scope:
    """The statements' scope of ``req``, read ``as_of`` (``req.as_of`` parsed; None: now)."""
    pattern = query_terms.like_pattern(req.source_id)[1:] if req.source_id else None
    return recall_queries.Scope(
        req.agent_id, req.project_id, req.channel, pattern, req.current_only, as_of
    )


def depth_of(lib: Library, limit: int, mode: candidate.Mode) -> int:
    """Rows per retriever: ``CPERSONA_RECALL_DEPTH``, or the mode's own when it is 0 (hybrid
    ``HYBRID_DEPTH``, the spec's modes ``limit``), never below ``limit``."""
    configured = lib.settings.recall_depth or (HYBRID_DEPTH if mode == "hybrid" else 0)
    return max(limit, configured)


def retrieval(
    lib: Library,
    req: RecallRequest,
    depth: int,
    terms: query_terms.Terms,
    mode: candidate.Mode,
) -> recall_queries.Retrieval:
    """What to retrieve, without the query vector (the embedding runs alongside the
    lexical half; the vector half gets the vector once it is there).

    The hybrid vector channel is ``CPERSONA_RECALL_VECTOR_DEPTH`` deep whatever the
    ``limit`` (a small LIMIT keeps Postgres on the HNSW index at scale, and ``limit`` never
    changes the candidates); the spec's modes take ``depth`` rows from every retriever.

    ``req.extra_lexical_terms`` (reconstruct's query expansion) join the substring
    patterns, as whole phrases: they reach the memory keyword arm and episode full text
    only, never the vector channel or the query's own terms; none changes nothing."""
    s = lib.settings
    fts = s.fts_enabled or mode == "cascade"
    patterns = terms.patterns + query_terms.phrase_patterns(req.extra_lexical_terms, terms.patterns)
    return recall_queries.Retrieval(
        vector=None,
        tsquery=terms.tsquery if fts else None,
        lexemes=terms.lexemes if fts else (),
        patterns=patterns if fts else (),
        limit=depth,
        episodes=not (req.source_id and not req.channel),
        recency=not req.query.strip(),
        confidence=s.confidence_enabled or (req.time_cue is not None and needs_span(req.time_cue)),
        vector_depth=min(depth, s.recall_vector_depth) if mode == "hybrid" else None,
        query=req.query,
        budget=s.recall_postings_budget,
        english_weight=s.lexical_english_weight,
        passages=s.passages_enabled,
    )


async def _keyword_fallback(
    conn: Connection,
    tenant_id: TenantId,
    req: RecallRequest,
    scope: recall_queries.Scope,
    limit: int,
) -> list[recall_queries.Hit]:
    """The literal substring match of the query, at most its first ``FALLBACK_CHARS``
    (the LIKE fallback of docs/tools.md, "Retrievers")."""
    fetch = min(10_000, max(5 * limit, 50))
    await recall_side.plan_each_statement(conn)  # after a recall statement's generic plan
    rows = await recall_side.like_fallback(
        conn, tenant_id, scope, fallback_pattern(req.query), fetch
    )
    return rows[:limit]


def fallback_pattern(query: str) -> str:
    """The LIKE fallback's pattern: the stripped query's first ``FALLBACK_CHARS``."""
    return query_terms.like_pattern(query.strip()[:FALLBACK_CHARS])


@dataclasses.dataclass(frozen=True, slots=True)
class Retrieved:
    """What the retrieval found, with the open transaction it found it in (``conn``): the
    recall's last statements (its chains, its statistics) run there, not in a transaction
    of their own (three round trips fewer: ``BEGIN``, ``enter_tenant``, ``COMMIT``)."""

    conn: Connection
    embedded: Embedded
    found: recall_queries.Candidates
    fallback: list[recall_queries.Hit]


@asynccontextmanager
async def retrieve(
    lib: Library,
    tenant_id: TenantId,
    req: RecallRequest,
    scope: recall_queries.Scope,
    wanted: recall_queries.Retrieval,
    limit: int,
    mode: candidate.Mode,
) -> AsyncIterator[Retrieved]:
    """The query's embedding, the lexical half and the vector half; the body of the
    ``async with`` runs in the transaction of the last half (it must not wait on anything
    but its own statements and Python: the connection is held).

    When the process is otherwise idle, the lexical statement runs while the model
    works (the model's time is hidden behind it). If the vector is there when it ends, or
    comes within ``VECTOR_HOLD_SECS`` (a lone recall: the statement and the model take
    about as long), the vector half runs in the same transaction; otherwise the
    transaction ends first and the vector half gets one of its own, so no pooled
    connection waits longer on an embedder (a slow provider). When other recalls are
    running or the embedder is busy, the process is loaded: overlapping hides nothing
    there and cost 8 clients 6-15 % of their throughput, so the query is embedded first
    and one transaction runs both halves. A failed lexical half cancels the embedding; a
    recall of ``limit`` 0 embeds nothing."""
    busy = RUNNING.count > 1 or _embedder_busy(lib)
    embedding = asyncio.ensure_future(_embed(lib, tenant_id, req.query if limit else ""))
    plans = recall_queries.plan_reusable(scope)
    try:
        if busy:  # loaded: the vector first, then one transaction for both halves
            await asyncio.wait([embedding])
        async with lib.db.tenant_tx(tenant_id, generic_plans=plans, serial=True) as conn:
            lexical = await recall_queries.lexical_candidates(conn, tenant_id, scope, wanted)
            fallback = await _fallback(lib, conn, tenant_id, req, scope, lexical, limit, mode)
            if not embedding.done():  # idle: the model is working for this recall alone
                await asyncio.wait([embedding], timeout=VECTOR_HOLD_SECS)
            if embedding.done():
                embedded = embedding.result()
                vectors = dataclasses.replace(wanted, vector=embedded.vector)
                found = await _with_vectors(lib, conn, tenant_id, scope, vectors, lexical)
                yield Retrieved(conn, embedded, found, fallback)
                return
    except BaseException:
        embedding.cancel()
        await asyncio.gather(embedding, return_exceptions=True)
        raise
    embedded = await embedding
    vectors = dataclasses.replace(wanted, vector=embedded.vector)
    async with lib.db.tenant_tx(tenant_id, generic_plans=plans, serial=True) as conn:
        found = await _with_vectors(lib, conn, tenant_id, scope, vectors, lexical)
        yield Retrieved(conn, embedded, found, fallback)


async def _with_vectors(
    lib: Library,
    conn: Connection,
    tenant_id: TenantId,
    scope: recall_queries.Scope,
    wanted: recall_queries.Retrieval,
    lexical: recall_queries.Lexical,
) -> recall_queries.Candidates:
    """The vector half (``recall_queries.with_vectors``), its records with passages scored
    length-neutrally (``passage_gain``: the best of many passages is no longer a head start)."""
    found = await recall_queries.with_vectors(conn, tenant_id, scope, wanted, lexical)
    hits = passage_gain.neutral(found.hits, lib.settings.passage_spread)
    return dataclasses.replace(found, hits=hits)


def _embedder_busy(lib: Library) -> bool:
    """Whether this process's embedding batcher is already working for other callers."""
    return isinstance(lib.embedder, EmbeddingBatcher) and lib.embedder.busy


async def _fallback(
    lib: Library,
    conn: Connection,
    tenant_id: TenantId,
    req: RecallRequest,
    scope: recall_queries.Scope,
    lexical: recall_queries.Lexical,
    limit: int,
    mode: candidate.Mode,
) -> list[recall_queries.Hit]:
    """The LIKE fallback's rows when full text found nothing (else none)."""
    keyword_on = lib.settings.fts_enabled or mode == "cascade"
    if limit and req.query.strip() and not lexical.found_by("memory_text") and keyword_on:
        return await _keyword_fallback(conn, tenant_id, req, scope, limit)
    return []
