"""Evidence quoted whole, and items ranked by the evidence they cite (pure functions).

The measure of docs/benchmarks/reconstruct.md. A gold turn is **quoted whole** by an
answer when its stored text, normalised (:func:`normalise`: Unicode NFC, every run of
whitespace one space, trimmed), is a substring of one normalised *piece* the answer shows:

- ``reconstruct``: each item's ``content`` and each ``excerpts[].content``;
- ``recall``: each row's ``content`` (the whole text or its preview) and its ``excerpt``.

Pieces are never joined: a turn cut in two by an answer is not quoted whole. The test is
on text alone, so either system gets the credit whichever row showed it (two turns with
the same text are the same evidence). A turn shorter than :data:`MIN_CHARS` normalised
characters would match by accident and is not counted as gold.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from bench.quality import scoring

MIN_CHARS = 12
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, trimmed: the form texts are compared in."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def reconstruct_pieces(body: Mapping[str, Any]) -> list[str]:
    """The texts a ``reconstruct`` answer shows: item contents and excerpt contents."""
    pieces: list[str] = []
    for item in _dicts(body.get("items")):
        pieces.extend(_texts([item.get("content")]))
        pieces.extend(_texts(e.get("content") for e in _dicts(item.get("excerpts"))))
    return pieces


def recall_pieces(body: Mapping[str, Any]) -> list[str]:
    """The texts a ``recall`` answer shows: each row's content (or preview) and excerpt."""
    rows = body.get("messages", body.get("results"))
    pieces: list[str] = []
    for row in _dicts(rows):
        pieces.extend(_texts([row.get("content"), row.get("excerpt")]))
    return pieces


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _texts(values: Iterable[object]) -> list[str]:
    return [v for v in values if isinstance(v, str) and v]


def quoted_whole(gold: Mapping[str, str], pieces: Sequence[str]) -> set[str]:
    """The ids of ``gold`` (id → stored text) whose normalised text lies inside one piece."""
    shown = [normalise(p) for p in pieces]
    return {gold_id for gold_id, text in gold.items() if any(normalise(text) in p for p in shown)}


def countable(gold: Mapping[str, str]) -> dict[str, str]:
    """The gold turns long enough to count (:data:`MIN_CHARS` normalised characters)."""
    return {k: v for k, v in gold.items() if len(normalise(v)) >= MIN_CHARS}


# --------------------------------------------------------------------------- items


def item_refs(item: Mapping[str, Any]) -> list[str]:
    """Every ref an item cites: its head, then its claims and excerpts, in order, unique."""
    refs = [item.get("head_ref")]
    refs += [c.get("ref") for c in _dicts(item.get("claims"))]
    refs += [e.get("ref") for e in _dicts(item.get("excerpts"))]
    out: list[str] = []
    for ref in refs:
        if isinstance(ref, str) and ref not in out:
            out.append(ref)
    return out


def item_ranking(
    items: Sequence[Mapping[str, Any]],
    turns_of: Mapping[str, Collection[str]],
    gold: Collection[str],
) -> list[str]:
    """Items as a ranking of turn ids for NDCG: each item stands for the first gold turn it
    cites (through ``turns_of``: ref → the turn ids stored as that record) that no earlier
    item stood for, else for a non-relevant ``"item:<position>"``."""
    credited: set[str] = set()
    ranked: list[str] = []
    for position, item in enumerate(items):
        cited = [t for ref in item_refs(item) for t in sorted(turns_of.get(ref, ()))]
        fresh = [t for t in cited if t in gold and t not in credited]
        ranked.append(fresh[0] if fresh else f"item:{position}")
        credited.update(fresh[:1])
    return ranked


def answer_items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The answer's items best first: ``reconstruct``'s items, or ``recall``'s rows (which
    come best-last) reversed, each row an item of its one ``ref``."""
    if "items" in body:
        return _dicts(body.get("items"))
    rows = _dicts(body.get("messages", body.get("results")))
    return [{"head_ref": row.get("ref")} for row in reversed(rows)]


def items_ndcg(
    items: Sequence[Mapping[str, Any]],
    turns_of: Mapping[str, Collection[str]],
    gold: Collection[str],
    k: int = 10,
) -> float:
    """Binary NDCG@k of the items (one gain per item that cites an uncredited gold turn)."""
    return scoring.ndcg_at_k(item_ranking(items, turns_of, gold), gold, k)


# --------------------------------------------------------------------------- summaries


@dataclasses.dataclass(frozen=True)
class Answer:
    """One question's answer under one configuration: what it showed and what it cost."""

    gold: int
    whole: int
    tokens: int
    failed: bool = False
    ndcg: float | None = None


def summary(answers: Sequence[Answer]) -> dict[str, Any]:
    """Evidence share (gold turns quoted whole / gold turns, over all questions), the mean
    per-question share, mean tokens, evidence per 1,000 tokens, failures."""
    gold = sum(a.gold for a in answers)
    whole = sum(a.whole for a in answers)
    tokens = sum(a.tokens for a in answers)
    per_question = [a.whole / a.gold for a in answers if a.gold]
    ndcgs = [a.ndcg for a in answers if a.ndcg is not None]
    return {
        "questions": len(answers),
        "gold_turns": gold,
        "quoted_whole": whole,
        "evidence_share": whole / gold if gold else None,
        "question_share": sum(per_question) / len(per_question) if per_question else None,
        "mean_tokens": tokens / len(answers) if answers else None,
        "evidence_per_1k_tokens": 1000 * whole / tokens if tokens else None,
        "ndcg10": sum(ndcgs) / len(ndcgs) if ndcgs else None,
        "failures": sum(a.failed for a in answers),
    }
