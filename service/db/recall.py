"""Storage side of recall: candidate retrieval in two statements (a lexical half that
needs no query vector and a vector half), the LIKE fallback, and the per-tenant
advisory state (both halves in ``sql/recall.sql``; the LIKE fallback, the statistics,
the advisory state and the parts both halves share in ``sql/recall_side.sql``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from service.config.recall import DEFAULT_POSTINGS_BUDGET
from service.db.pool import Connection
from service.db.sql import QUERIES, VECTOR_DIMS, number, shaped, shaped_arguments
from service.models import TenantId

WALK_FROM: Final = 2_000
"""The agent's episodes or passages from which recall finds its nearest through their HNSW
index; fewer are ranked exactly, none are not read (``recall_vectors``, part
``walk_counts``). An HNSW index holds every agent's rows and filters after the walk, so for
an agent with few of them it reads on through the others' (beside 7,996 passages of
another agent, 28 ms instead of 5 for an agent with none; beside 5,000 episodes, 16 to 18 ms
instead of 2 to 3). Ranking exactly costs about 1 µs a row, the walk about 2 ms on this
corpus: they meet here
(docs/reliability.md, "Long-record costs: recall beside an agent with many passages")."""


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """The isolation axes of one recall (docs/tools.md, "Isolation axes"), and how it reads
    time (docs/tools.md, "Facts that change"): only current records (``current_only``),
    or the records that held at ``as_of`` (None: every record). The recall statements
    leave the others out before ranking, so a record that holds is found below any
    number that do not."""

    agent: str
    project_id: str | None
    channel: str
    source_pattern: str | None
    current_only: bool = False
    as_of: datetime | None = None


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
    budget: int = DEFAULT_POSTINGS_BUDGET
    simple_weight: float = 0.5
    english_weight: float = 1.0
    passages: bool = True
    """Whether the vector channel scores a record by its best passage too
    (CPERSONA_PASSAGES)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PassageMatch:
    """The passage of a record that matched the query best by meaning: ``[start, end)``
    in the record's vector text (a memory's content; an episode's summary, then its
    keywords) in code points, and its cosine with the query (docs/architecture.md,
    "Passages")."""

    start: int
    end: int
    cosine: float


class Hit(NamedTuple):
    """One row a retriever found: its channel ('memory_text', 'vector', ...), identity,
    rank signal and position there, what the message needs, and the text features.

    A named tuple rather than a frozen dataclass: a recall builds ~120 of them, and a
    frozen dataclass's ``__init__`` (a ``object.__setattr__`` per field) took 2.2 µs each
    against 0.5 µs. Immutable all the same."""

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
    passage: PassageMatch | None = None
    parts: int = 0
    """How many passages the record has (0: none, or passages not read): the chances its
    best cosine had (``memory.recall.passage_gain``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Candidates:
    hits: list[Hit]
    meta: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class FeatureTerms:
    """What ``recall_lexical`` computed its rows' text features from, handed to
    ``recall_vectors`` so the rows only vectors find get the very same features:
    the English stems as tsqueries with their IDF (in one order, so sums agree to the
    last bit; as Postgres wrote it, float8 text, which is exact), the phrase queries and
    the any-word queries (tsquery text, or None)."""

    stems: list[str]
    idfs: list[str]
    phrases: list[str]
    any_simple: str | None
    any_english: str | None


NO_COSINES: Mapping[tuple[str, int], float] = MappingProxyType({})
"""The cosines of a recall whose vector half did not run: none."""
NO_PASSAGES: Mapping[tuple[str, int], PassageMatch] = MappingProxyType({})
"""The best passages of a recall whose vector half did not run: none."""
NO_COUNTS: Mapping[tuple[str, int], int | None] = MappingProxyType({})
"""The passage counts of a recall whose vector half did not run: none."""


@dataclasses.dataclass(frozen=True, slots=True)
class Lexical:
    """The lexical half of a recall: its rows, the meta row, and the terms the vector
    half needs.

    The rows stay records until their cosines are known (``hits``), so each becomes a
    :class:`Hit` once: copying ~100 frozen hits to add a cosine cost ~0.8 ms a recall.
    """

    rows: list[Any]
    meta: dict[str, Any]
    terms: FeatureTerms

    def found_by(self, channel: str) -> bool:
        """Whether any lexical row came from ``channel`` (e.g. ``memory_text``)."""
        return any(r["channel"] == channel for r in self.rows)

    def ids(self, kind: str) -> list[str]:
        """The ids of the rows of ``kind`` ('mem' or 'ep'), as text (``recall_vectors``)."""
        return [str(r["id"]) for r in self.rows if r["kind"] == kind]

    def hits(
        self,
        cosines: Mapping[tuple[str, int], float] = NO_COSINES,
        passages: Mapping[tuple[str, int], PassageMatch] = NO_PASSAGES,
        counts: Mapping[tuple[str, int], int | None] = NO_COUNTS,
    ) -> list[Hit]:
        """The rows as hits, each with its cosine from ``cosines``, its best passage from
        ``passages`` and its passage count from ``counts`` (none: no vector ran)."""
        return [
            _hit(
                r,
                cosines.get((r["kind"], r["id"])),
                passages.get((r["kind"], r["id"])),
                counts.get((r["kind"], r["id"])),
            )
            for r in self.rows
        ]

    def alone(self) -> Candidates:
        """The candidates when the vector half does not run: these hits, no cosines."""
        return Candidates(hits=self.hits(), meta=self.meta)


def width(vector: Sequence[float] | None) -> int:
    """The query's width when an index exists for it; 384 when no vector is used."""
    if vector is None:
        return VECTOR_DIMS[0]
    return len(vector) if len(vector) in VECTOR_DIMS else VECTOR_DIMS[0]


def searches_vectors(wanted: Retrieval) -> bool:
    """Whether the vector half runs: a query vector of a width with an index."""
    return wanted.vector is not None and len(wanted.vector) in VECTOR_DIMS


def plan_reusable(scope: Scope) -> bool:
    """Whether the recall statements of ``scope`` may run generic plans
    (``tenant_tx(generic_plans=True)``): every shape except a source filter, whose LIKE
    pattern's selectivity only a plan for the actual pattern can judge."""
    return scope.source_pattern is None


def omitted(scope: Scope) -> frozenset[str]:
    return frozenset(
        tag
        for tag, off in (
            ("project", scope.project_id is None),
            ("channel", scope.channel == ""),
            ("source", scope.source_pattern is None),
            ("current", not scope.current_only),
            ("as_of", scope.as_of is None),
        )
        if off
    )


@functools.lru_cache(maxsize=256)
def shape(query: str, omit: frozenset[str], literals: tuple[tuple[int, int], ...]) -> str:
    return shaped(query, omit=omit, literals=dict(literals))


def lexical_statement(scope: Scope, wanted: Retrieval) -> str:
    """``recall_lexical`` rendered for this call's shape (``sql.shaped``): the filters
    that are off left out, the depths written in. Few shapes occur (the depths follow
    the recall's ``limit``), so each is rendered once and prepared once per connection."""
    depths = (
        (number("recall_lexical", "depth"), wanted.limit),
        (number("recall_lexical", "budget"), wanted.budget),
    )
    return shape(QUERIES["recall_lexical"], omitted(scope), depths)


def vector_statement(scope: Scope, wanted: Retrieval) -> str:
    """``recall_vectors`` of the query's width, rendered as ``lexical_statement`` is."""
    name = f"recall_vectors_{width(wanted.vector)}"
    query = QUERIES[f"recall_vectors_{width(wanted.vector)}"]
    return shape(query, omitted(scope), ((number(name, "depth"), _vector_depth(wanted)),))


def scope_values(tenant_id: TenantId, scope: Scope) -> dict[str, object]:
    """The arguments of the scope both recall statements share (their recall_scope part);
    ``as_of`` is bound only by the shape that reads it (``sql.shaped_arguments``)."""
    return {
        "tenant_id": tenant_id,
        "agent": scope.agent,
        "project_id": scope.project_id,
        "channel": scope.channel,
        "source_pattern": scope.source_pattern,
        "as_of": scope.as_of,
    }


def _vector_depth(wanted: Retrieval) -> int:
    return wanted.limit if wanted.vector_depth is None else wanted.vector_depth


async def lexical_candidates(
    conn: Connection, tenant_id: TenantId, scope: Scope, wanted: Retrieval
) -> Lexical:
    """The lexical channels, the meta row and the feature terms (``recall_lexical``);
    ``wanted.vector`` is not read, so this runs while the query is being embedded."""
    values = {
        **scope_values(tenant_id, scope),
        "tsquery": wanted.tsquery,
        "patterns": list(wanted.patterns),
        "depth": wanted.limit,
        "episodes": wanted.episodes,
        "recency": wanted.recency,
        "lexemes": list(wanted.lexemes),
        "confidence": wanted.confidence,
        "query": wanted.query,
        "budget": wanted.budget,
        "simple_weight": wanted.simple_weight,
        "english_weight": wanted.english_weight,
    }
    statement = lexical_statement(scope, wanted)
    records = await conn.fetch(statement, *shaped_arguments("recall_lexical", statement, values))
    rows = [r for r in records if r["channel"] != "meta"]
    meta = next(r for r in records if r["channel"] == "meta")
    terms = FeatureTerms(
        list(meta["stem_queries"] or ()),
        list(meta["stem_idfs"] or ()),
        list(meta["phrase_queries"] or ()),
        meta["any_simple"],
        meta["any_english"],
    )
    return Lexical(rows=rows, meta=dict(meta["meta"]), terms=terms)


async def with_vectors(
    conn: Connection, tenant_id: TenantId, scope: Scope, wanted: Retrieval, lexical: Lexical
) -> Candidates:
    """Every candidate of the recall: ``lexical``'s hits with their stored cosines, and
    the vector channels' hits (``recall_vectors``). Without a searchable query vector
    (``searches_vectors``) the lexical hits alone, with no cosines, as the vector
    channel never ran."""
    if not searches_vectors(wanted):
        return lexical.alone()
    assert wanted.vector is not None
    values = {
        **scope_values(tenant_id, scope),
        "vector": list(wanted.vector),
        "episodes": wanted.episodes,
        "passages": wanted.passages,
        "walk_from": WALK_FROM,
        "depth": _vector_depth(wanted),
        "memory_ids": lexical.ids("mem"),
        "episode_ids": lexical.ids("ep"),
        "stems": lexical.terms.stems,
        "idfs": lexical.terms.idfs,
        "phrases": lexical.terms.phrases,
        "any_simple": lexical.terms.any_simple,
        "any_english": lexical.terms.any_english,
        "patterns": list(wanted.patterns),
    }
    statement = vector_statement(scope, wanted)
    records = await conn.fetch(
        statement,
        *shaped_arguments(f"recall_vectors_{width(wanted.vector)}", statement, values),
    )
    cosines = {(r["kind"], r["id"]): r["cosine"] for r in records if r["channel"] == "cosine"}
    parts = {
        (r["kind"], r["id"]): part
        for r in records
        if r["channel"] == "cosine" and (part := _passage(r)) is not None
    }
    counts = {(r["kind"], r["id"]): r["parts"] for r in records if r["channel"] == "cosine"}
    found = [
        _hit(r, r["cosine"], parts.get((r["kind"], r["id"])) or _passage(r), r["parts"])
        for r in records
        if r["channel"] != "cosine"
    ]
    return Candidates(hits=lexical.hits(cosines, parts, counts) + found, meta=lexical.meta)


async def recall_candidates(
    conn: Connection, tenant_id: TenantId, scope: Scope, wanted: Retrieval
) -> Candidates:
    """Both halves of a recall on one connection, one after the other (calibration and
    the benchmarks' inspection; a recall itself overlaps the lexical half with the
    query's embedding, ``memory.recall.pipeline``)."""
    lexical = await lexical_candidates(conn, tenant_id, scope, wanted)
    return await with_vectors(conn, tenant_id, scope, wanted, lexical)


def _passage(record: Any) -> PassageMatch | None:
    """The best passage a ``recall_vectors`` row names, if any."""
    if record["part_start"] is None:
        return None
    return PassageMatch(record["part_start"], record["part_end"], record["part_cosine"])


def _hit(
    record: Any, cosine: float | None, passage: PassageMatch | None = None, parts: int | None = 0
) -> Hit:
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
        cosine,
        record["recall_count"] or 0,
        record["last_recalled_at"],
        record["coverage"],
        record["phrase"],
        bool(record["matched"]),
        passage,
        parts or 0,
    )
