"""Settings of recall ranking and of its calibration."""

from __future__ import annotations

import dataclasses
from typing import Final

from service.config.fields import (
    UNIT,
    CalibrateMethod,
    RecallMode,
    RecallPrecision,
    parse_bool,
    parse_choice,
    parse_float,
    parse_int,
    setting,
)

DEFAULT_HNSW_EF_SEARCH: Final = 100
"""HNSW's search breadth (pgvector's ``hnsw.ef_search``, whose own default is 40).

Measured on a 100k-row agent of LoCoMo-derived memories with real question vectors
(docs/ranking.md, "Ranking knobs"): the share of the exact 10
nearest rows the channel finds is 0.74 at 40, 0.88 at 100 and 0.93 at 200, for a fraction
of a millisecond. It also enters the planner's cost of an HNSW scan (the larger it is, the
larger a table must be before the planner prefers HNSW to the exact plan), which is why
the tenant transactions that plan their statements (per call, or recall's generic plans)
price random reads for data in memory (``DEFAULT_RANDOM_PAGE_COST``)."""


MAX_QUERY_TERMS: Final = 16
"""Words a query searches by default (``CPERSONA_RECALL_MAX_TERMS``): every LoCoMo question
has at most 15, so only a long query is cut (docs/reliability.md, "Fair shares of the
database (hardening round three)")."""

MAX_QUERY_PATTERNS: Final = 8
"""Substring patterns a query searches by default (``CPERSONA_RECALL_MAX_PATTERNS``): each
is an ``ILIKE`` over every candidate row's text, the costliest part of the lexical half."""


DEFAULT_RANDOM_PAGE_COST: Final = 1.1
"""The planner's cost of a random page read in the tenant transactions that plan their
statements — recall's generic plans and every transaction planned per call, not the
cached-plan path (Postgres's own default is 4.0).

4.0 prices a random read as four sequential ones, a spinning disk's ratio; a recall's data
lives in memory, where the two cost the same. With 4.0 the planner takes the exact plan
for the vector channel (scan the agent's rows, sort by distance) on small tables, and that
plan reads every vector back from TOAST: at 3,000 rows through MCP a recall took 43.1 ms at
p50 against 30.8 ms with 1.1 (docs/ranking.md, "Ranking knobs")."""


DEFAULT_POSTINGS_BUDGET: Final = 500
"""Postings of the rarest query terms the lexical channel scores with BM25 in full: terms
are taken rarest first while their rows add up to at most this many, and rows holding only
commoner terms compete only when those rows are fewer than the lexical depth (one posting
list then tops them up). It bounds a query's lexical cost at any corpus size.

Chosen by quality on three benchmarks of different shapes, not by speed
(docs/benchmarks/quality.md, "Current numbers"): from 2000 to 500, LoCoMo NDCG@10 went
0.526 to 0.527, LoCoMo with all ten conversations in one agent 0.477 to 0.482, and the
held-out FAQ set stayed at 0.688; 250 was better still on both LoCoMo shapes but cost the
held-out set 0.012, so 500 (five times the hybrid lexical depth) is the smallest budget no
benchmark loses on. A row that shares only a common word with the query is weak lexical
evidence, and the gate keeps every lexical match, so fewer of them is no loss. The
lexical statement's median fell from 6.4 to 4.0 ms at a 10k-row agent and from 9.7 to 6.2
ms at 100k, its p95 from 10.1 to 5.5 and from 17.5 to 9.2 ms
(docs/benchmarks/latency.md, "What the numbers mean")."""


@dataclasses.dataclass(frozen=True)
class RecallSettings:
    # -- recall ranking
    recall_mode: RecallMode = setting(
        "hybrid", "CPERSONA_RECALL_MODE", parse=parse_choice("hybrid", "rrf", "rsf", "cascade")
    )
    rrf_k: int = setting(60, "CPERSONA_RRF_K", parse=parse_int(1, 100_000))
    max_memories: int = setting(10_000, "CPERSONA_MAX_MEMORIES", parse=parse_int(1, 1_000_000))
    vector_min_similarity: float = setting(0.3, "CPERSONA_VECTOR_MIN_SIMILARITY", parse=UNIT)
    rrf_threshold_factor: float = setting(
        0.5, "CPERSONA_RRF_THRESHOLD_FACTOR", parse=parse_float(0.0, 10.0)
    )
    fts_enabled: bool = setting(True, "CPERSONA_FTS_ENABLED", parse=parse_bool)
    autocut_enabled: bool = setting(True, "CPERSONA_AUTOCUT_ENABLED", parse=parse_bool)
    autocut_min_gap_ratio: float = setting(0.15, "CPERSONA_AUTOCUT_MIN_GAP_RATIO", parse=UNIT)
    autocut_min_results: int = setting(3, "CPERSONA_AUTOCUT_MIN_RESULTS", parse=parse_int(2, 1000))
    episode_penalty_enabled: bool = setting(
        True, "CPERSONA_EPISODE_PENALTY_ENABLED", parse=parse_bool
    )
    episode_decay_rate: float = setting(
        0.01, "CPERSONA_EPISODE_DECAY_RATE", parse=parse_float(0.0, 100.0)
    )
    episode_decay_floor: float = setting(0.5, "CPERSONA_EPISODE_DECAY_FLOOR", parse=UNIT)
    fused_gate_enabled: bool = setting(True, "CPERSONA_FUSED_GATE_ENABLED", parse=parse_bool)
    confidence_enabled: bool = setting(False, "CPERSONA_CONFIDENCE_ENABLED", parse=parse_bool)
    degraded_advisory: bool = setting(True, "CPERSONA_DEGRADED_ADVISORY", parse=parse_bool)
    rsf_lexical_weight: float = setting(0.5, "CPERSONA_RSF_LEXICAL_WEIGHT", parse=UNIT)
    recall_depth: int = setting(0, "CPERSONA_RECALL_DEPTH", parse=parse_int(0, 1000))
    """Candidates per retriever; 0: the mode's own (hybrid 100, the spec's modes ``limit``)."""
    recall_vector_depth: int = setting(20, "CPERSONA_RECALL_VECTOR_DEPTH", parse=parse_int(1, 1000))
    recall_postings_budget: int = setting(
        DEFAULT_POSTINGS_BUDGET, "CPERSONA_RECALL_POSTINGS_BUDGET", parse=parse_int(1, 1_000_000)
    )
    """Postings of the rarest query terms BM25 scores in full (``DEFAULT_POSTINGS_BUDGET``)."""
    recall_max_terms: int = setting(
        MAX_QUERY_TERMS, "CPERSONA_RECALL_MAX_TERMS", parse=parse_int(1, 256)
    )
    """Distinct words of a query the lexical half searches: the longest, when it has more."""
    recall_max_patterns: int = setting(
        MAX_QUERY_PATTERNS, "CPERSONA_RECALL_MAX_PATTERNS", parse=parse_int(0, 256)
    )
    """Substring patterns (CJK trigrams, identifiers) of a query searched: the longest."""
    hnsw_ef_search: int = setting(
        DEFAULT_HNSW_EF_SEARCH, "CPERSONA_HNSW_EF_SEARCH", parse=parse_int(1, 1000)
    )
    """Candidates an HNSW scan keeps while it walks the graph (every tenant transaction)."""
    random_page_cost: float = setting(
        DEFAULT_RANDOM_PAGE_COST, "CPERSONA_RANDOM_PAGE_COST", parse=parse_float(0.01, 100.0)
    )
    """``random_page_cost`` of the tenant transactions that plan their statements
    (recall's generic plans, and every one planned per call); the server's elsewhere."""
    hybrid_lexical_weight: float = setting(0.45, "CPERSONA_HYBRID_LEXICAL_WEIGHT", parse=UNIT)
    hybrid_vector_seats: int = setting(0, "CPERSONA_HYBRID_VECTOR_SEATS", parse=parse_int(0, 100))
    """Places of a hybrid answer kept for the best rows by cosine (docs/tools.md, "Vector
    seats"); 0: none."""
    lexical_english_weight: float = setting(
        1.0, "CPERSONA_LEXICAL_ENGLISH_WEIGHT", parse=parse_float(0.0, 10.0)
    )
    rerank_depth: int = setting(50, "CPERSONA_RERANK_DEPTH", parse=parse_int(0, 1000))
    recall_cue_time_limit_ms: int = setting(
        1000, "CPERSONA_RECALL_CUE_TIME_LIMIT_MS", parse=parse_int(0, 60_000)
    )
    """A time cue's one widening runs only while the recall has taken less than this
    (docs/tools.md, "Time cues"); 0 = never widen."""

    # -- calibration
    calibrate_sample_size: int = setting(
        200, "CPERSONA_CALIBRATE_SAMPLE_SIZE", parse=parse_int(1, 5000)
    )
    calibrate_max_sample: int = setting(
        2000, "CPERSONA_CALIBRATE_MAX_SAMPLE", parse=parse_int(10, 5000)
    )
    """Upper clamp of calibrate_threshold's sample: the null distribution is all pairs."""
    calibrate_z_factor: float = setting(
        1.0, "CPERSONA_CALIBRATE_Z_FACTOR", parse=parse_float(-10.0, 10.0)
    )
    calibrate_floor: float = setting(0.05, "CPERSONA_CALIBRATE_FLOOR", parse=UNIT)
    calibrate_method: CalibrateMethod = setting(
        "separation",
        "CPERSONA_CALIBRATE_METHOD",
        parse=parse_choice("separation", "percentile", "zscore"),
    )
    calibrate_percentile: float = setting(
        0.95, "CPERSONA_CALIBRATE_PERCENTILE", parse=parse_float(0.001, 1.0)
    )
    calibrate_temporal_window_min: float = setting(
        30.0, "CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN", parse=parse_float(0.0, 10_080.0)
    )
    fused_gate_sample_queries: int = setting(
        40, "CPERSONA_FUSED_GATE_SAMPLE_QUERIES", parse=parse_int(1, 1000)
    )
    fused_gate_calibration_draws: int = setting(
        5, "CPERSONA_FUSED_GATE_CALIBRATION_DRAWS", parse=parse_int(1, 51)
    )
    recall_precision: RecallPrecision = setting(
        "balanced",
        "CPERSONA_RECALL_PRECISION",
        parse=parse_choice("strict", "balanced", "lenient"),
    )
    fused_gate_beta: float | None = setting(
        None, "CPERSONA_FUSED_GATE_BETA", parse=parse_float(0.001, 1000.0)
    )
    """The global gate beta; None: the beta of ``recall_precision`` (2.0 / 1.0 / 0.5)."""
