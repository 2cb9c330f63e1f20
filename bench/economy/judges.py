"""The relevance-judgement proxies of the token-economy benchmark (pure).

Does a 500-character preview still let a reader judge relevance? Two proxies: whether
the evidence turn lies inside the preview of the row that holds it (over the whole
corpus and in the rows a recall returned), and whether a plain lexical judge picks an
evidence row from the previews as often as from the full texts.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from bench.corpora.locomo import Question
from bench.economy.corpus import LONGEST_EXCERPT, PREVIEW_CHARS, Placement, Span
from bench.economy.features import could_be_wholly_visible, judge_text, visibility
from bench.economy.tally import Context, Tally
from bench.quality import scoring as quality

FETCH_TOP = 2  # rows a reader fetches in full after reading the previews
SHORT_ANSWER_MAX = 40
ANSWER_ORDER = ["inside", "straddles", "beyond", "not_verbatim"]


def position(span: Span, visible: int) -> str:
    """Where a turn lies relative to the first ``visible`` characters of its row."""
    if span.end <= visible:
        return "inside"
    return "straddles" if span.start < visible else "beyond"


def answer_position(content: str, answer: str, visible: int) -> str:
    """Where the first case-insensitive occurrence of ``answer`` lies in ``content``."""
    found = content.lower().find(answer.lower())
    if found < 0:
        return "not_verbatim"
    return position(Span("", found, found + len(answer)), visible)


def static_proxy(
    questions: Sequence[Question],
    placement: Mapping[str, Placement],
    answers: Mapping[tuple[str, int], str],
) -> dict[str, Any]:
    """Corpus-level proxy: every evidence turn's position in its row's preview."""
    turns: collections.Counter[str] = collections.Counter()
    long_turns: collections.Counter[str] = collections.Counter()
    per_question: collections.Counter[str] = collections.Counter()
    answer_pos: collections.Counter[str] = collections.Counter()
    for q in questions:
        place = placement[q.sample_id]
        where = [position(place.span_of[d], PREVIEW_CHARS) for d in q.relevant]
        turns.update(where)
        long_turns.update(
            w
            for d, w in zip(q.relevant, where, strict=True)
            if len(place.memory_of[d].content) > PREVIEW_CHARS
        )
        per_question["any_inside" if "inside" in where else "none_inside"] += 1
        answer = answers.get((q.sample_id, q.number), "")
        if 0 < len(answer) <= SHORT_ANSWER_MAX:
            rows = {place.memory_of[d].msg_id: place.memory_of[d] for d in q.relevant}
            spots = [answer_position(m.content, answer, PREVIEW_CHARS) for m in rows.values()]
            answer_pos[min(spots, key=ANSWER_ORDER.index)] += 1
    return {
        "evidence_turns": dict(turns),
        "evidence_turns_in_long_rows": dict(long_turns),
        "questions": dict(per_question),
        "short_answers": dict(answer_pos),
    }


def evidence_in_response(
    q: Question, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally
) -> None:
    """In-response proxy: for evidence rows that came back, where the turn lies in the preview
    (and, for long rows, how much of it the preview and the excerpt show together)."""
    place = ctx.placement[q.sample_id]
    by_id = {str(r.get("id", "")): r for r in rows}
    found = []
    for dia_id in q.relevant:
        memory = place.memory_of[dia_id]
        row = by_id.get(memory.msg_id)
        if row is None:
            continue
        where = position(place.span_of[dia_id], len(str(row.get("content", ""))))
        kind = "long" if len(memory.content) > PREVIEW_CHARS else "short"
        tally.evidence[f"{kind}:{where}"] += 1
        if kind == "long":
            span, shown = place.span_of[dia_id], len(str(row.get("content", "")))
            tally.features.visible[visibility(span, row)] += 1
            possible = could_be_wholly_visible(span, shown, LONGEST_EXCERPT)
            tally.features.ceiling["possible" if possible else "impossible"] += 1
        found.append(where)
    if found:
        tally.questions["any_inside" if "inside" in found else "none_inside"] += 1
    else:
        tally.questions["evidence_row_not_returned"] += 1


def lexical_pick(query: str, docs: Sequence[tuple[str, str]], k: int = FETCH_TOP) -> list[str]:
    """The ``k`` ids a plain BM25 judge (no stopwords) picks from ``docs`` for ``query``."""
    return quality.Bm25Index(docs).rank(query, k) if docs else []


def judge(q: Question, rows: Sequence[Mapping[str, Any]], ctx: Context, tally: Tally) -> None:
    """Second proxy: can a lexical judge pick an evidence row among the returned rows as
    often from the previews as from the full texts? Only questions whose evidence row
    came back count; the service's own top rows are the reference."""
    place = ctx.placement[q.sample_id]
    wanted = {place.memory_of[d].msg_id for d in q.relevant}
    shown = [(str(r.get("id", "")), str(r.get("content", ""))) for r in rows if r.get("ref")]
    if not wanted & {i for i, _ in shown}:
        return
    full = ctx.corpus[q.sample_id]
    excerpted = [(str(r.get("id", "")), judge_text(r)) for r in rows if r.get("ref")]
    choices = {
        "previews": lexical_pick(q.text, shown),
        "previews+excerpts": lexical_pick(q.text, excerpted),
        "full": lexical_pick(q.text, [(i, full[i].content) for i, _ in shown if i in full]),
        "service": [i for i, _ in reversed(shown)][:FETCH_TOP],
    }
    tally.judge["eligible"] += 1
    for name, picks in choices.items():
        tally.judge[f"{name}_top1"] += bool(picks) and picks[0] in wanted
        tally.judge[f"{name}_top2"] += bool(wanted & set(picks))
