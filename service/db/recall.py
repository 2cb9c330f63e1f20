"""Storage side of recall: candidate retrieval in one statement, the LIKE fallback,
and the per-tenant advisory state (queries in ``sql/recall.sql``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES, VECTOR_DIMS, shaped
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """The isolation axes of one recall (spec §6.1 read rules)."""

    agent: str
    project_id: str | None
    channel: str
    source_pattern: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Retrieval:
    """What the retrievers should run: query vector, full-text query, patterns.

    ``limit`` is the lexical (and episode, recency) depth, ``vector_depth`` the vector
    channel's (None: ``limit``); ``query`` is the query text (its English vector orders
    the stems for the phrase feature); ``budget`` bounds the postings scored exhaustively;
    ``english_weight`` 0 turns the stemmed channel off.
    """

    vector: Sequence[float] | None
    tsquery: str | None
    lexemes: Sequence[str]
    patterns: Sequence[str]
    limit: int
    episodes: bool
    recency: bool
    confidence: bool = False
    vector_depth: int | None = None
    query: str = ""
    budget: int = 2000
    simple_weight: float = 0.5
    english_weight: float = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class Hit:
    channel: str
    kind: str
    id: int
    score: float | None
    position: int
    content: str
    source: Any
    timestamp: str
    msg_id: str
    created_at: datetime
    resolved: bool | None
    cosine: float | None = None
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    coverage: float | None = None
    phrase: float | None = None
    matched: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Candidates:
    hits: list[Hit]
    meta: dict[str, Any]


def _width(vector: Sequence[float] | None) -> int:
    """The query's width when an index exists for it; 384 when no vector is used."""
    if vector is None:
        return VECTOR_DIMS[0]
    return len(vector) if len(vector) in VECTOR_DIMS else VECTOR_DIMS[0]


def plan_reusable(scope: Scope) -> bool:
    """Whether the recall statement of ``scope`` may run a generic plan
    (``tenant_tx(generic_plans=True)``): every shape except a source filter, whose LIKE
    pattern's selectivity only a plan for the actual pattern can judge."""
    return scope.source_pattern is None


@functools.lru_cache(maxsize=256)
def _shape(width: int, omit: frozenset[str], depth: int, vector_depth: int, budget: int) -> str:
    return shaped(
        QUERIES[f"recall_candidates_{width}"],
        omit=omit,
        literals={9: depth, 14: vector_depth, 16: budget},
    )


def statement(scope: Scope, wanted: Retrieval) -> str:
    """The recall statement rendered for this call's shape (``sql.shaped``): the filters
    that are off left out, the depths written in. Few shapes occur (the depths follow
    the recall's ``limit``), so each is rendered once and prepared once per connection."""
    omit = frozenset(
        tag
        for tag, off in (
            ("project", scope.project_id is None),
            ("channel", scope.channel == ""),
            ("source", scope.source_pattern is None),
        )
        if off
    )
    return _shape(_width(wanted.vector), omit, wanted.limit, _vector_depth(wanted), wanted.budget)


def _vector_depth(wanted: Retrieval) -> int:
    return wanted.limit if wanted.vector_depth is None else wanted.vector_depth


async def recall_candidates(
    conn: Connection, tenant_id: TenantId, scope: Scope, wanted: Retrieval
) -> Candidates:
    width = _width(wanted.vector)
    vector = None if wanted.vector is None or len(wanted.vector) != width else wanted.vector
    records = await conn.fetch(
        statement(scope, wanted),
        tenant_id,
        scope.agent,
        scope.project_id,
        scope.channel,
        scope.source_pattern,
        None if vector is None else list(vector),
        wanted.tsquery,
        list(wanted.patterns),
        wanted.limit,
        wanted.episodes,
        wanted.recency,
        list(wanted.lexemes),
        wanted.confidence,
        _vector_depth(wanted),
        wanted.query,
        wanted.budget,
        wanted.simple_weight,
        wanted.english_weight,
    )
    hits = [_hit(r) for r in records if r["channel"] != "meta"]
    meta = next(dict(r["meta"]) for r in records if r["channel"] == "meta")
    return Candidates(hits=hits, meta=meta)


def _hit(record: Any) -> Hit:
    return Hit(
        record["channel"],
        record["kind"],
        record["id"],
        record["score"],
        record["position"],
        record["content"],
        record["source"],
        record["timestamp_text"],
        record["msg_id"],
        record["created_at"],
        record["resolved"],
        record["cosine"],
        record["recall_count"] or 0,
        record["last_recalled_at"],
        record["coverage"],
        record["phrase"],
        bool(record["matched"]),
    )


async def plan_each_statement(conn: Connection) -> None:
    """Plan the rest of this transaction's statements for their values again (after a
    recall statement with a generic plan: the LIKE fallback's pattern needs it)."""
    await conn.execute(QUERIES["plan_each_statement"])


async def like_fallback(
    conn: Connection, tenant_id: TenantId, scope: Scope, pattern: str, fetch: int
) -> list[Hit]:
    records = await conn.fetch(
        QUERIES["like_fallback"],
        tenant_id,
        scope.agent,
        scope.project_id,
        scope.channel,
        scope.source_pattern,
        pattern,
        fetch,
    )
    return [
        Hit(
            "keyword",
            "mem",
            r["id"],
            None,
            n,
            r["content"],
            r["source"],
            r["timestamp_text"],
            r["msg_id"],
            r["created_at"],
            None,
        )
        for n, r in enumerate(records, start=1)
    ]


async def bump_recall_stats(conn: Connection, tenant_id: TenantId, ids: Sequence[int]) -> None:
    await conn.execute(QUERIES["bump_recall_stats"], tenant_id, list(ids))


async def note_advisory(conn: Connection, tenant_id: TenantId, state: str, long_form: bool) -> bool:
    """Record the advisory state; True when the long runbook had been shown before."""
    return bool(await conn.fetchval(QUERIES["note_advisory"], tenant_id, state, long_form))
