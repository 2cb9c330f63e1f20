"""Knowledge-update benchmark (docs/benchmarks/facts.md; docs/tools.md, "Facts that change").

The LongMemEval development set's knowledge-update questions (the answer changed over
time: the latest value is right), through MCP against the real service: every turn of a
question's haystack stored in one agent (its session's date as the timestamp), the
question recalled (``limit: 10``), then the same agent again after declaring, as a careful
agent would on noticing the change, the newest gold session's evidence turn as superseding
the evidence turns of each earlier gold session. Reported both ways: how often the newest
evidence ranks above the older one (of the questions where both are in the ten rows),
session-level NDCG@10, and the newest evidence's presence.

    .venv/bin/python -m bench.facts.knowledge_update --data ../shared/data/longmemeval-dev
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession

from bench.harness.client import call_json, mcp_session
from bench.harness.serving import running_service
from bench.quality.scoring import ndcg_at_k
from tests.servers.processes import ServiceOptions

LIMIT = 10


@dataclasses.dataclass(frozen=True)
class Question:
    """One knowledge-update question: its text, gold sessions oldest first, and turns."""

    qid: str
    question: str
    gold: tuple[str, ...]
    sessions: tuple[tuple[str, str, list[dict[str, Any]]], ...]  # (id, iso date, turns)


def _iso(date: str) -> str:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` as ISO 8601 UTC."""
    day, _, clock = date.partition(" (")
    stamp = f"{day} {clock.partition(') ')[2]} +0000"
    return datetime.strptime(stamp, "%Y/%m/%d %H:%M %z").astimezone(UTC).isoformat()


def load(data: Path) -> list[Question]:
    found: list[Question] = []
    for path in sorted(data.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("question_type") != "knowledge-update":
            continue
        dates = {
            s: _iso(d)
            for s, d in zip(record["haystack_session_ids"], record["haystack_dates"], strict=True)
        }
        sessions = tuple(
            (sid, dates[sid], turns)
            for sid, turns in zip(
                record["haystack_session_ids"], record["haystack_sessions"], strict=True
            )
        )
        gold = tuple(sorted(record["answer_session_ids"], key=lambda s: dates[s]))
        found.append(Question(record["question_id"], record["question"], gold, sessions))
    return found


@dataclasses.dataclass
class Scored:
    both: int = 0
    newest_first: int = 0
    newest_found: int = 0
    ndcg: float = 0.0
    questions: int = 0


async def _store(session: ClientSession, agent: str, q: Question) -> dict[str, list[int]]:
    """Every turn stored; the memory ids of each session's evidence turns."""
    evidence: dict[str, list[int]] = {}
    for sid, date, turns in q.sessions:
        for i, turn in enumerate(turns):
            content = str(turn.get("content") or "").strip()
            if not content:
                continue
            kind = "User" if turn.get("role") == "user" else "Agent"
            message = {
                "id": f"{sid}#{i}",
                "content": content,
                "timestamp": date,
                "source": {"type": kind, "id": kind.lower()},
            }
            reply = await call_json(session, "store", {"agent_id": agent, "message": message})
            if turn.get("has_answer") and "id" in reply.body:
                evidence.setdefault(sid, []).append(int(reply.body["id"]))
    return evidence


async def _declare(
    session: ClientSession, agent: str, q: Question, evidence: dict[str, list[int]]
) -> int:
    newest = evidence.get(q.gold[-1], [])
    if not newest:
        return 0
    relations = [
        {"subject": f"mem:{newest[0]}", "predicate": "supersedes", "object": f"mem:{old}"}
        for sid in q.gold[:-1]
        for old in evidence.get(sid, [])
    ]
    reply = await call_json(
        session,
        "declare_associations",
        {"agent_id": agent, "associations": {"relations": relations[:64]}},
    )
    return len(reply.body.get("relations", []))


async def _score(session: ClientSession, agent: str, q: Question, into: Scored) -> None:
    reply = await call_json(
        session, "recall", {"agent_id": agent, "query": q.question, "limit": LIMIT}
    )
    rows = list(reversed(reply.body.get("messages") or []))  # best first
    ranked = [str(row.get("id", "")).partition("#")[0] for row in rows]
    newest = next((i for i, s in enumerate(ranked) if s == q.gold[-1]), None)
    older = next((i for i, s in enumerate(ranked) if s in q.gold[:-1]), None)
    into.questions += 1
    into.ndcg += ndcg_at_k(ranked, set(q.gold), LIMIT)
    into.newest_found += newest is not None
    if newest is not None and older is not None:
        into.both += 1
        into.newest_first += newest < older


async def run(questions: Sequence[Question]) -> dict[str, Scored]:
    plain, declared = Scored(), Scored()
    with running_service(ServiceOptions()) as service:
        async with mcp_session(service.mcp_url, service.key) as session:
            for n, q in enumerate(questions):
                agent = f"ku{n}"
                evidence = await _store(session, agent, q)
                await _score(session, agent, q, plain)
                await _declare(session, agent, q, evidence)
                await _score(session, agent, q, declared)
    return {"nothing declared": plain, "newest declared as superseding": declared}


def table(results: dict[str, Scored]) -> str:
    lines = [
        "| Run | Questions | Both in top 10 | Newest above older | Newest in top 10 | NDCG@10 |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in results.items():
        share = f"{s.newest_first}/{s.both}" if s.both else "-"
        ndcg = s.ndcg / max(s.questions, 1)
        cells = [name, str(s.questions), str(s.both), share, str(s.newest_found), f"{ndcg:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/longmemeval-dev"))
    parser.add_argument("--questions", type=int, default=10)
    args = parser.parse_args(argv)
    questions = load(args.data)[: args.questions]
    print(table(asyncio.run(run(questions))))


if __name__ == "__main__":
    main()
