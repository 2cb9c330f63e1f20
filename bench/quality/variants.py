"""The query configurations of the LoCoMo benchmark: service settings plus ``deep``."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from bench.harness.serving import BenchError


@dataclasses.dataclass(frozen=True)
class Variant:
    """A query configuration: service settings plus the ``deep`` flag."""

    name: str
    env: dict[str, str]
    deep: bool = False


DEFAULT_VARIANTS = (Variant("default", {}), Variant("deep", {}, deep=True))
RSF_07 = {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_RSF_LEXICAL_WEIGHT": "0.7"}
TUNING_VARIANTS = (
    Variant("vector only (FTS off)", {"CPERSONA_FTS_ENABLED": "false"}),
    Variant("vector only, deep", {"CPERSONA_FTS_ENABLED": "false"}, deep=True),
    Variant("lexical only (mode none)", {"CPERSONA_EMBEDDING_MODE": "none"}),
    Variant("rrf k=10", {"CPERSONA_RRF_K": "10"}),
    Variant("rrf k=200", {"CPERSONA_RRF_K": "200"}),
    Variant("vector floor 0 (min sim 0)", {"CPERSONA_VECTOR_MIN_SIMILARITY": "0"}),
    Variant("vector floor 0.3 (factor 1.0)", {"CPERSONA_RRF_THRESHOLD_FACTOR": "1.0"}),
    Variant("vector floor 0.45 (min sim 0.9)", {"CPERSONA_VECTOR_MIN_SIMILARITY": "0.9"}),
    Variant("autocut off", {"CPERSONA_AUTOCUT_ENABLED": "false"}),
    Variant("rsf", {"CPERSONA_RECALL_MODE": "rsf"}),
    Variant("rsf, deep", {"CPERSONA_RECALL_MODE": "rsf"}, deep=True),
    Variant(
        "rsf, autocut off", {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_AUTOCUT_ENABLED": "false"}
    ),
    Variant("cascade", {"CPERSONA_RECALL_MODE": "cascade"}),
    Variant("vector seats 3", {"CPERSONA_HYBRID_VECTOR_SEATS": "3"}),
    Variant("vector seats 4", {"CPERSONA_HYBRID_VECTOR_SEATS": "4"}),
    Variant("vector seats 5", {"CPERSONA_HYBRID_VECTOR_SEATS": "5"}),
    Variant("rrf k=10, deep", {"CPERSONA_RRF_K": "10"}, deep=True),
    Variant("rrf, depth 50", {"CPERSONA_RECALL_DEPTH": "50"}),
    Variant(
        "rsf, lexical 0.7", {"CPERSONA_RECALL_MODE": "rsf", "CPERSONA_RSF_LEXICAL_WEIGHT": "0.7"}
    ),
    Variant("rsf, lexical 0.7, depth 100", {**RSF_07, "CPERSONA_RECALL_DEPTH": "100"}),
    Variant(
        "rsf, lexical 0.7, depth 100, deep", {**RSF_07, "CPERSONA_RECALL_DEPTH": "100"}, deep=True
    ),
    Variant(
        "rsf, lexical 0.6, depth 30",
        {
            "CPERSONA_RECALL_MODE": "rsf",
            "CPERSONA_RSF_LEXICAL_WEIGHT": "0.6",
            "CPERSONA_RECALL_DEPTH": "30",
        },
    ),
)


ALTERNATIVES = (
    Variant("spec rrf", {"CPERSONA_RECALL_MODE": "rrf"}),
    Variant(
        "tuned rsf (before issue 9)",
        {**RSF_07, "CPERSONA_RECALL_DEPTH": "100", "CPERSONA_LEXICAL_ENGLISH_WEIGHT": "0"},
    ),
    Variant("hybrid, no stemming", {"CPERSONA_LEXICAL_ENGLISH_WEIGHT": "0"}),
    Variant("hybrid, no second stage", {"CPERSONA_RERANK_DEPTH": "0"}),
    Variant("hybrid, lexical weight 0.6", {"CPERSONA_HYBRID_LEXICAL_WEIGHT": "0.6"}),
    Variant("hybrid, lexical weight 0.3", {"CPERSONA_HYBRID_LEXICAL_WEIGHT": "0.3"}),
    Variant("postings budget 2000", {"CPERSONA_RECALL_POSTINGS_BUDGET": "2000"}),
    Variant("postings budget 1000", {"CPERSONA_RECALL_POSTINGS_BUDGET": "1000"}),
    Variant("postings budget 500", {"CPERSONA_RECALL_POSTINGS_BUDGET": "500"}),
    Variant("postings budget 250", {"CPERSONA_RECALL_POSTINGS_BUDGET": "250"}),
)
"""The documented alternatives to the default and the choices around it (issue 9), run with
the local embedder (lexical-only is mode ``none``, E5 mode ``local-e5``)."""


def variants_for(
    mode: str, tune: bool, names: Collection[str], alternatives: bool = False
) -> list[Variant]:
    """The variants to query under embedding ``mode``: the defaults, plus the tuning ones
    in local mode when ``tune`` and the documented alternatives (local mode) when
    ``alternatives``; only
    the ``names`` given, when any are."""
    chosen = list(DEFAULT_VARIANTS)
    if mode == "local" and tune:
        chosen += TUNING_VARIANTS
    if mode == "local" and alternatives:
        chosen += ALTERNATIVES
    if names:
        known = (*DEFAULT_VARIANTS, *TUNING_VARIANTS, *ALTERNATIVES)
        wanted = {v.strip() for v in names}
        unknown = wanted - {v.name for v in known}
        if unknown:
            raise BenchError(f"unknown variant(s): {sorted(unknown)}")
        chosen = [v for v in known if v.name in wanted]
    return chosen
