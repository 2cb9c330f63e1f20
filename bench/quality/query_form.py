"""The local model's query form against the graph as shipped: speed, agreement, quality.

Recall embeds its query with the query form (``service/embeddings/query_graph.py``:
the shipped int8 weights multiplied in int8, each query alone) while stored texts keep the
graph as shipped. This measures, in process and through the provider's own methods (its
model thread, as the service calls it), on LoCoMo's questions and turns:

* speed: milliseconds per query of ``embed_queries`` (the query form, each alone) and of
  ``embed`` (the shipped graph) for the same questions in batches of 1, 2, 4 and 8 texts
  (rounds interleaved, the best round kept: the machine is shared);
* agreement: the cosine between the two forms' vectors of each question;
* quality: exact cosine retrieval over each conversation's turns (stored form) with the
  questions in each form, NDCG@10 and Recall@10 per category (the vector channel alone,
  without the service's fusion; ``bench.quality.locomo`` measures the whole recall).

    .venv/bin/python -m bench.quality.query_form --data ../shared/data/locomo/locomo10.json \\
        --out bench/results/query-form.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import LIMIT, Conversation, load, questions_of
from bench.harness.machine import machine_facts, record_end
from bench.quality import scoring as quality

BATCH_SIZES = (1, 2, 4, 8)
Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]
Vectors = Sequence[Sequence[float]]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo10.json"))
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--speed-questions", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/query-form.json"))
    return parser.parse_args(argv)


async def _ms_per_text(embed: Embed, texts: Sequence[str], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        await embed(texts[start : start + batch])
    return (time.perf_counter() - started) * 1000 / len(texts)


async def _speed(forms: dict[str, Embed], texts: Sequence[str], rounds: int) -> list[Any]:
    best: dict[tuple[str, int], float] = {}
    for _ in range(rounds):
        for batch in BATCH_SIZES:
            for name, embed in forms.items():
                ms = await _ms_per_text(embed, texts, batch)
                best[(name, batch)] = min(ms, best.get((name, batch), ms))
    return [
        {"batch": batch, **{f"{name}_ms": round(best[(name, batch)], 3) for name in forms}}
        for batch in BATCH_SIZES
    ]


def _rankings(queries: Vectors, turns: Vectors, ids: Sequence[str]) -> list[list[str]]:
    """Each query's ``LIMIT`` best turns by exact cosine (unit vectors: inner product)."""
    import numpy as np

    scores = np.asarray(queries) @ np.asarray(turns).T
    return [[ids[i] for i in np.argsort(-row, kind="stable")[:LIMIT]] for row in scores]


def _agreement(a: Vectors, b: Vectors) -> list[float]:
    """The cosine between the two vectors of each text."""
    return [sum(x * y for x, y in zip(u, v, strict=True)) for u, v in zip(a, b, strict=True)]


async def _quality(
    provider: Any, convs: Sequence[Conversation]
) -> tuple[dict[str, Any], list[float]]:
    per_form: dict[str, list[tuple[int, quality.Scores]]] = {"shipped": [], "query_form": []}
    agreement: list[float] = []
    for conv in convs:
        turns = await provider.embed([t.content for t in conv.turns])
        ids = [t.dia_id for t in conv.turns]
        texts = [q.text for q in conv.questions]
        shipped, query_form = await provider.embed(texts), await provider.embed_queries(texts)
        agreement += _agreement(shipped, query_form)
        for name, vectors in (("shipped", shipped), ("query_form", query_form)):
            for q, ranked in zip(conv.questions, _rankings(vectors, turns, ids), strict=True):
                per_form[name].append((q.category, quality.score(ranked, q.relevant, LIMIT)))
    summaries = {
        name: {group: dataclasses.asdict(s) for group, s in quality.summarise(scored).items()}
        for name, scored in per_form.items()
    }
    return summaries, agreement


async def _measure(args: argparse.Namespace) -> dict[str, Any]:
    from service.embeddings.local import LocalEmbeddingProvider

    convs = load(args.data, args.conversations, None)
    texts = [q.text for q in questions_of(convs)][: args.speed_questions]
    provider = LocalEmbeddingProvider()
    try:
        await provider.load()
        forms: dict[str, Embed] = {"shipped": provider.embed, "query_form": provider.embed_queries}
        speed = await _speed(forms, texts, args.rounds)
        summaries, agreement = await _quality(provider, convs)
    finally:
        await provider.aclose()
    return {
        "speed_ms_per_query": speed,
        "agreement_cosine": {
            "min": round(min(agreement), 5),
            "mean": round(sum(agreement) / len(agreement), 5),
            "questions": len(agreement),
        },
        "vector_only_quality": summaries,
    }


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine_facts(), "command": vars(args)}
    results.update(asyncio.run(_measure(args)))
    record_end(results, started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(json.dumps({k: results[k] for k in ("speed_ms_per_query", "agreement_cosine")}))
    for name, summary in results["vector_only_quality"].items():
        print(name, {group: round(s["ndcg"], 4) for group, s in summary.items()})
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
