"""How well can an excerpt find the evidence? The service's excerpt code, offline.

``python -m bench.token_excerpt_offline [--conversations N] [--vector]``

For every LoCoMo evidence turn that does not lie wholly inside the 500-character preview
of its long row (the token benchmark's chunked corpus), does the excerpt the service would
give that row reach the turn (it starts at or before the turn and ends after the turn's
start), and does it show the turn whole? The answer's other rows, which weigh the query's
terms, are the row's conversation's BM25 top ten for the question (a stand-in for recall's
answer, so that no service runs).

The ceiling says what no locator can beat: a turn longer than one excerpt
(``EXCERPT_CHARS``) can never be shown whole by it, so the share of turns that fit is the
most a perfect locator would show whole.

Two references put the number in context: a per-line BM25 over the row's own turns
(which line a plain lexical reader would pick), and with ``--vector`` the line whose
MiniLM embedding is closest to the question's (the "vector channel's best sentence"),
with the embedding throughput that decides whether it is cheap enough for a recall.
Imports the service's code from a snapshot (:mod:`bench.snapshot`).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.cli import write_results
from bench.locomo_data import DEFAULT_DATA
from bench.machine import machine_facts
from bench.quality import Bm25Index
from bench.snapshot import run_on_snapshot
from bench.token_corpus import (
    EXCERPT_CHARS,
    PREVIEW_CHARS,
    Memory,
    Placement,
    Span,
    build_corpus,
    load,
)

DEFAULT_OUT = Path("bench/results/token_excerpt_offline.json")


def reaches(offset: int, length: int, start: int) -> bool:
    """Whether the passage ``[offset, offset + length)`` shows the start of a turn."""
    return offset <= start < offset + length


def shows_whole(found: tuple[int, int] | None, span: Span) -> bool:
    """Whether the passage ``found`` (offset, length) contains the whole turn ``span``."""
    return found is not None and found[0] <= span.start and span.end <= sum(found)


def fits(span: Span) -> bool:
    """Whether one excerpt could show the turn whole (the ceiling of any locator)."""
    return span.end - span.start <= EXCERPT_CHARS


def lexical(memory: Memory, rows: Sequence[str], query: str) -> tuple[int, int] | None:
    """``(offset, length)`` of the service's excerpt of ``memory`` (the last of ``rows``)."""
    from service.mcp.shaping import excerpt

    wanted = [False] * (len(rows) - 1) + [True]
    found = excerpt.excerpts(rows, wanted, query, PREVIEW_CHARS)[-1]
    return None if found is None else (found.offset, len(found.text))


def line_bm25(memory: Memory, query: str) -> str | None:
    """The turn a per-line BM25 over the row's own turns ranks first."""
    turns = [(s.dia_id, memory.content[s.start : s.end]) for s in memory.spans]
    picked = Bm25Index(turns).rank(query, 1)
    return picked[0] if picked else None


async def vector_lines(
    cases: Sequence[tuple[Memory, str, str]],
) -> tuple[collections.Counter[str], float]:
    """Per case, whether the line closest to the question is the evidence turn; lines/s."""
    from service.memory.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider()
    hits: collections.Counter[str] = collections.Counter()
    started, embedded = time.perf_counter(), 0
    try:
        for memory, query, dia_id in cases:
            texts = [query] + [memory.content[s.start : s.end] for s in memory.spans]
            vectors = await provider.embed(texts)
            embedded += len(texts)
            scores = [sum(a * b for a, b in zip(vectors[0], v, strict=True)) for v in vectors[1:]]
            best = memory.spans[max(range(len(scores)), key=scores.__getitem__)].dia_id
            hits["vector_line_is_evidence"] += best == dia_id
    finally:
        await provider.aclose()
    return hits, embedded / (time.perf_counter() - started)


def run(args: argparse.Namespace) -> dict[str, Any]:
    convs, _ = load(args.data, args.conversations)
    counts: collections.Counter[str] = collections.Counter()
    cases: list[tuple[Memory, str, str]] = []
    for conv in convs:
        corpus = build_corpus(conv)
        place = Placement.of(corpus)
        index = Bm25Index([(m.msg_id, m.content) for m in corpus])
        by_id = {m.msg_id: m for m in corpus}
        for q in conv.questions:
            top = [by_id[i].content for i in index.rank(q.text, 10)]
            for dia_id in q.relevant:
                memory, span = place.memory_of[dia_id], place.span_of[dia_id]
                if len(memory.content) <= PREVIEW_CHARS or span.end <= PREVIEW_CHARS:
                    continue
                counts["evidence_turns_beyond_preview"] += 1
                rows = [*[text for text in top if text != memory.content][:9], memory.content]
                found = lexical(memory, rows, q.text)
                counts["excerpts"] += found is not None
                counts["excerpt_reaches_evidence"] += found is not None and reaches(
                    *found, span.start
                )
                counts["excerpt_shows_evidence_whole"] += shows_whole(found, span)
                counts["evidence_fits_one_excerpt"] += fits(span)
                counts["line_bm25_is_evidence"] += line_bm25(memory, q.text) == dia_id
                cases.append((memory, q.text, dia_id))
    results: dict[str, Any] = {"machine": machine_facts(), "code": args.code_id}
    if args.vector:
        hits, rate = asyncio.run(vector_lines(cases))
        counts.update(hits)
        results["vector_lines_per_second"] = round(rate, 1)
    total = counts["evidence_turns_beyond_preview"] or 1
    results["counts"] = dict(counts)
    results["shares"] = {k: round(v / total, 4) for k, v in counts.items()}
    return results


def markdown(results: dict[str, Any]) -> str:
    shares, counts = results["shares"], results["counts"]
    lines = [
        f"Evidence turns beyond the preview: {counts['evidence_turns_beyond_preview']}.",
        f"- the service's excerpt reaches the turn: {shares['excerpt_reaches_evidence']:.1%}"
        f" (an excerpt on {shares['excerpts']:.1%} of these rows);",
        f"- the excerpt shows the turn whole: {shares['excerpt_shows_evidence_whole']:.1%};",
        f"- the ceiling of any locator (the turn fits in one excerpt):"
        f" {shares['evidence_fits_one_excerpt']:.1%};",
        f"- a per-line BM25 picks the turn: {shares['line_bm25_is_evidence']:.1%};",
    ]
    if "vector_line_is_evidence" in shares:
        lines.append(
            f"- the line nearest by MiniLM embedding is the turn:"
            f" {shares['vector_line_is_evidence']:.1%}, at"
            f" {results['vector_lines_per_second']} lines embedded per second."
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.token_excerpt_offline")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="first N (default 10)")
    parser.add_argument("--vector", action="store_true", help="also the MiniLM line reference")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results")
    args = parser.parse_args(argv)
    results = run_on_snapshot(args, run, import_here=True)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
