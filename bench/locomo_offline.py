"""Offline references for the LoCoMo benchmark: plain BM25 and fusion what-ifs.

Not the service: plain BM25 (service stopwords) and brute-force cosine over the same
turns, to check the protocol and to show which fusion shape could beat BM25 alone.
The service is imported late (stopwords, local model) so a snapshot can come first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from bench import quality
from bench.embed import embed
from bench.locomo_data import LIMIT, Conversation, Question, Turn

WHAT_IF_DEPTH = 100
FusionFn = Callable[[dict[str, float], dict[str, float]], list[str]]


def offline_bm25(convs: Sequence[Conversation]) -> dict[str, quality.Summary]:
    """Plain BM25 on the same corpus and questions (the protocol's sanity check)."""
    from service.memory.recall.query_terms import STOPWORDS

    per_question = []
    for conv in convs:
        index = quality.Bm25Index([(t.dia_id, t.content) for t in conv.turns], STOPWORDS)
        for q in conv.questions:
            per_question.append((q.category, quality.score(index.rank(q.text), q.relevant)))
    return quality.summarise(per_question)


def _rrf(k: int, depth: int, lexical_weight: float = 1.0) -> FusionFn:
    return lambda lex, vec: quality.fuse_rrf(
        [list(lex), list(vec)], k, [lexical_weight, 1.0], depth
    )


def _convex(lexical_weight: float, depth: int = WHAT_IF_DEPTH) -> FusionFn:
    def fuse(lex: dict[str, float], vec: dict[str, float]) -> list[str]:
        channels = [dict(list(c.items())[:depth]) for c in (lex, vec)]
        return quality.fuse_scores(channels, [lexical_weight, 1 - lexical_weight])

    return fuse


WHAT_IFS: dict[str, FusionFn] = {
    "BM25 alone": lambda lex, vec: list(lex),
    "MiniLM alone (exact cosine)": lambda lex, vec: list(vec),
    "rrf k=60, depth 10 (the service's shape)": _rrf(60, 10),
    "rrf k=60, depth 50": _rrf(60, 50),
    "rrf k=60, depth 100": _rrf(60, 100),
    "rrf k=60, depth 50, lexical x1.5": _rrf(60, 50, 1.5),
    "rrf k=60, depth 50, lexical x2": _rrf(60, 50, 2.0),
    "rrf k=60, depth 50, lexical x3": _rrf(60, 50, 3.0),
    "rrf k=10, depth 50, lexical x2": _rrf(10, 50, 2.0),
    "rrf k=60, depth 10, lexical x2": _rrf(60, 10, 2.0),
    "rrf k=60, depth 10, lexical wins ties": _rrf(60, 10, 1.000001),
    "min-max scores, depth 10, 0.5/0.5": _convex(0.5, 10),
    "min-max scores, depth 10, 0.7 lexical": _convex(0.7, 10),
    "min-max scores, depth 100, 0.5/0.5": _convex(0.5),
    "min-max scores, depth 100, 0.6 lexical": _convex(0.6),
    "min-max scores, depth 100, 0.7 lexical": _convex(0.7),
    "min-max scores, depth 100, 0.8 lexical": _convex(0.8),
    "min-max scores, depth 30, 0.7 lexical": _convex(0.7, 30),
}


def _vector_scores(turns: Sequence[Turn], questions: Sequence[Question]) -> list[dict[str, float]]:
    """Exact cosine top-``WHAT_IF_DEPTH`` per question with the service's local model."""
    import numpy as np

    vectors = np.asarray(
        asyncio.run(embed([t.content for t in turns] + [q.text for q in questions]))
    )
    docs, queries = vectors[: len(turns)], vectors[len(turns) :]
    out = []
    for row in queries @ docs.T:
        best = np.argsort(-row, kind="stable")[:WHAT_IF_DEPTH]
        out.append({turns[i].dia_id: float(row[i]) for i in best})
    return out


def what_if(convs: Sequence[Conversation]) -> dict[str, dict[str, Any]]:
    """Offline fusion what-ifs: BM25 and exact MiniLM channels fused in several ways."""
    from service.memory.recall.query_terms import STOPWORDS

    per_config: dict[str, list[tuple[int, quality.Scores]]] = {name: [] for name in WHAT_IFS}
    for conv in convs:
        index = quality.Bm25Index([(t.dia_id, t.content) for t in conv.turns], STOPWORDS)
        vector = _vector_scores(conv.turns, conv.questions)
        for q, vec in zip(conv.questions, vector, strict=True):
            lex = index.scores(q.text, WHAT_IF_DEPTH)
            for name, fuse in WHAT_IFS.items():
                scored = quality.score(fuse(lex, vec), q.relevant, LIMIT)
                per_config[name].append((q.category, scored))
    return {
        name: {k: dataclasses.asdict(v) for k, v in quality.summarise(rows).items()}
        for name, rows in per_config.items()
    }
