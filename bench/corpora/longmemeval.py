"""The LongMemEval development subset as haystacks to store and questions to ask.

Read from ``../shared/data/longmemeval-dev/`` (MIT, arXiv:2410.10813; never copied): one
file per question, each with its own haystack of user/assistant sessions. A haystack
becomes one :class:`~bench.corpora.locomo.Conversation` (one agent per question):
every turn one memory ``"<role>: <content>"`` (cut to :data:`MAX_CONTENT` characters,
the store bound of both systems) with id ``S{session}:{turn}`` (0-based positions) and
its session's date as the timestamp; the question's relevant turns are those marked
``has_answer: true`` (turn-level gold, as the data set's README defines it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.corpora.locomo import Conversation, Question, Turn
from bench.harness.serving import REPO_ROOT

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "longmemeval-dev"
MAX_CONTENT = 16_000
"""Both systems refuse a memory longer than 16,000 characters; longer turns are cut."""
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
CATEGORY_OF_TYPE: Mapping[str, int] = {
    "single-session-user": 201,
    "single-session-assistant": 202,
    "single-session-preference": 203,
    "multi-session": 204,
    "knowledge-update": 205,
    "temporal-reasoning": 206,
}
"""The question types as category numbers (the LoCoMo tables' numbering starts at 1)."""
TYPE_OF_CATEGORY = {number: name for name, number in CATEGORY_OF_TYPE.items()}


def session_timestamp(text: str) -> str:
    """A haystack date (``"2023/05/20 (Sat) 01:18"``) as ISO-8601, read as UTC."""
    moment = datetime.strptime(text.strip(), DATE_FORMAT)  # noqa: DTZ007
    return moment.strftime("%Y-%m-%dT%H:%M:00+00:00")


def turn_content(turn: Mapping[str, Any]) -> str:
    """The stored text of one turn: ``"<role>: <content>"``, cut to :data:`MAX_CONTENT`."""
    return f"{turn['role']}: {turn['content']}"[:MAX_CONTENT]


def haystack_of(record: Mapping[str, Any], agent: str) -> Conversation:
    """One question record as a conversation of turns and its single question."""
    turns: list[Turn] = []
    gold: list[str] = []
    sessions = record["haystack_sessions"]
    for s, (session, date) in enumerate(zip(sessions, record["haystack_dates"], strict=True)):
        for t, turn in enumerate(session):
            dia_id = f"S{s}:{t}"
            turns.append(Turn(dia_id, turn_content(turn), session_timestamp(date)))
            if turn.get("has_answer") is True:
                gold.append(dia_id)
    category = CATEGORY_OF_TYPE[str(record["question_type"])]
    question = Question(agent, 0, category, str(record["question"]), tuple(gold))
    return Conversation(agent, tuple(turns), (question,) if gold else ())


def select(files: Sequence[Path], per_type: int | None) -> list[Path]:
    """The first ``per_type`` files of each question type, in file-name order (all when None).

    The type is read from the file's record; the order is the sorted file names."""
    kept: list[Path] = []
    seen: dict[str, int] = {}
    for path in sorted(files):
        kind = str(json.loads(path.read_text())["question_type"])
        if per_type is None or seen.get(kind, 0) < per_type:
            seen[kind] = seen.get(kind, 0) + 1
            kept.append(path)
    return kept


def load(data: Path, per_type: int | None) -> list[Conversation]:
    """The selected questions of the development set, one conversation (agent) each."""
    files = [p for p in data.glob("*.json") if p.name != "manifest.json"]
    convs = []
    for path in select(files, per_type):
        record = json.loads(path.read_text())
        convs.append(haystack_of(record, f"lme-{record['question_id']}"))
    return convs
