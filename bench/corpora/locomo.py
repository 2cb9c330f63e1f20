"""The LoCoMo data set as turns to store and questions to ask (no I/O but reading the file).

The data set (CC BY-NC 4.0, arXiv:2402.17753) is read from
``../shared/data/locomo/locomo10.json``; it is never copied.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness.serving import REPO_ROOT
from bench.quality import scoring as quality

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
POOLED_AGENT = "pooled"
LIMIT = 10  # every question is one recall of this many rows, scored at this depth


@dataclasses.dataclass(frozen=True)
class Turn:
    dia_id: str
    content: str
    timestamp: str


@dataclasses.dataclass(frozen=True)
class Question:
    sample_id: str
    number: int
    category: int
    text: str
    relevant: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str]]:
    """``(number, turns, date text)`` of every session, in session order."""
    found = []
    for key, value in conversation.items():
        suffix = key.removeprefix("session_")
        if key.startswith("session_") and suffix.isdigit() and isinstance(value, list):
            found.append((int(suffix), value, str(conversation[f"{key}_date_time"])))
    return sorted(found, key=lambda item: item[0])


def conversation_of(sample: dict[str, Any], max_questions: int | None) -> Conversation:
    """One sample as turns to store and questions (with evidence) to ask."""
    turns = [
        Turn(str(t["dia_id"]), quality.turn_content(t), quality.session_timestamp(date))
        for _, session, date in _sessions(sample["conversation"])
        for t in session
    ]
    valid = {t.dia_id for t in turns}
    questions = []
    for number, qa in enumerate(sample["qa"]):
        relevant = quality.normalise_evidence(qa.get("evidence", []), valid)
        if relevant:
            questions.append(
                Question(
                    sample["sample_id"],
                    number,
                    int(qa["category"]),
                    str(qa["question"]),
                    tuple(relevant),
                )
            )
    return Conversation(sample["sample_id"], tuple(turns), tuple(questions[:max_questions]))


def pooled(convs: Sequence[Conversation]) -> Conversation:
    """Every conversation in one agent: the same questions against ``len(convs)`` times the
    rows, the others' turns as distractors (turn ids become ``<sample>/<dia_id>``).

    LoCoMo's agents hold 369-689 turns each, too few for the lexical channel's postings
    budget or the vector channel's depth to bind; pooled, they bind as at a larger agent."""
    turns = tuple(
        dataclasses.replace(t, dia_id=f"{c.sample_id}/{t.dia_id}") for c in convs for t in c.turns
    )
    questions = tuple(
        dataclasses.replace(
            q,
            sample_id=POOLED_AGENT,
            number=number,
            relevant=tuple(f"{q.sample_id}/{r}" for r in q.relevant),
        )
        for number, q in enumerate(questions_of(convs))
    )
    return Conversation(POOLED_AGENT, turns, questions)


def read_samples(path: Path, conversations: int | None) -> list[dict[str, Any]]:
    """The first ``conversations`` raw samples of the data set file."""
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    return samples[:conversations]


def load(path: Path, conversations: int | None, questions: int | None) -> list[Conversation]:
    """The first ``conversations`` samples, at most ``questions`` questions each."""
    return [conversation_of(s, questions) for s in read_samples(path, conversations)]


def questions_of(convs: Sequence[Conversation]) -> list[Question]:
    """Every question of ``convs``, conversation by conversation."""
    return [q for c in convs for q in c.questions]
