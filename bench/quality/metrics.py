"""LoCoMo answers and their scores: ranked rows per question, metrics, diagnostics (pure)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from bench.corpora.locomo import LIMIT, Question
from bench.harness.stats import latency_stats
from bench.quality import scoring as quality


@dataclasses.dataclass(frozen=True)
class Answer:
    """One question's outcome: ranked dia_ids (best first), row signals, latency, and the
    ranking of a ``limit: 50`` recall of the same question when one was asked."""

    question: Question
    ranked: tuple[str, ...]
    vector_rows: tuple[bool, ...]
    seconds: float
    failed: bool
    gate_fallback: bool
    deeper: tuple[str, ...] | None = None


def answer_of(
    q: Question, body: Mapping[str, Any], seconds: float, failed: bool, aliases: Mapping[str, str]
) -> Answer:
    """A recall body as an answer: rows reversed (recall answers best-last), each row's
    ``id`` mapped back to its dia_id (a skipped duplicate to the turn stored first)."""
    rows = list(reversed(body.get("messages") or []))
    ranked = tuple(
        aliases.get(f"{q.sample_id}/{row.get('id', '')}", str(row.get("id", ""))) for row in rows
    )
    vector = tuple("cosine" in (row.get("match_reason") or {}) for row in rows)
    return Answer(q, ranked, vector, seconds, failed, bool(body.get("gate_fallback")))


def sharing_counts(
    turns: Mapping[str, Sequence[str]], questions: Sequence[Question], stopwords: Collection[str]
) -> dict[tuple[str, int], int]:
    """Per question: how many of its agent's turns share a content word with it (lower-cased
    words of two or more characters, not stop words): the answers that must not be short."""
    bags = {agent: [set(quality.tokens(text)) for text in texts] for agent, texts in turns.items()}
    out: dict[tuple[str, int], int] = {}
    for q in questions:
        words = {w for w in quality.tokens(q.text) if len(w) >= 2 and w not in stopwords}
        out[(q.sample_id, q.number)] = sum(bool(words & bag) for bag in bags[q.sample_id])
    return out


def diagnostics(
    answers: Sequence[Answer], sharing: Mapping[tuple[str, int], int] | None = None
) -> dict[str, Any]:
    """Row counts and where rows (and relevant rows) came from; with ``sharing``, the
    answers shorter than ``limit`` although the agent holds at least ``limit`` memories
    sharing a content word with the question (issue 9's no-starvation target)."""
    rows = [len(a.ranked) for a in answers]
    returned = sum(rows)
    relevant = [(a, i) for a in answers for i, d in enumerate(a.ranked) if d in a.question.relevant]
    vector_rows = sum(sum(a.vector_rows) for a in answers)
    short = [a for a in answers if len(a.ranked) < LIMIT]
    starved = sum(
        (sharing or {}).get((a.question.sample_id, a.question.number), 0) >= LIMIT for a in short
    )
    return {
        "short_with_matches": starved if sharing is not None else None,
        "queries": len(answers),
        "failed": sum(a.failed for a in answers),
        "gate_fallback": sum(a.gate_fallback for a in answers),
        "fewer_than_10_rows": sum(n < LIMIT for n in rows),
        "zero_rows": sum(n == 0 for n in rows),
        "mean_rows": round(returned / len(answers), 2) if answers else 0.0,
        "rows_with_cosine_share": round(vector_rows / returned, 3) if returned else 0.0,
        "relevant_rows": len(relevant),
        "relevant_rows_with_cosine": sum(a.vector_rows[i] for a, i in relevant),
    }


def evaluate(
    answers: Sequence[Answer],
    wall_s: float,
    sharing: Mapping[tuple[str, int], int] | None = None,
) -> dict[str, Any]:
    """Metrics per category/overall/macro, diagnostics and recall latency."""
    per_question = [
        (a.question.category, quality.score(a.ranked, a.question.relevant, LIMIT, a.deeper))
        for a in answers
    ]
    summary = quality.summarise(per_question)
    return {
        "metrics": {name: dataclasses.asdict(s) for name, s in summary.items()},
        "diagnostics": diagnostics(answers, sharing),
        "latency": dataclasses.asdict(latency_stats([a.seconds for a in answers], wall_s)),
    }


def per_question(answers: Sequence[Answer]) -> list[dict[str, Any]]:
    """Each question's ranked dia_ids and which rows carried a cosine (for analysis)."""
    return [
        {
            "sample": a.question.sample_id,
            "q": a.question.number,
            "cat": a.question.category,
            "relevant": list(a.question.relevant),
            "ranked": list(a.ranked),
            "cosine": [int(v) for v in a.vector_rows],
            "ms": round(a.seconds * 1000, 1),
        }
        for a in answers
    ]
