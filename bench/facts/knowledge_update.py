"""Knowledge-update benchmark (docs/benchmarks/facts.md; docs/tools.md, "Facts that change").

The LongMemEval development set's knowledge-update questions (the answer changed over
time: the latest value is right), through MCP against the real service: every turn of a
question's haystack stored in one agent (its session's date as the timestamp), the
question recalled (``limit: 10``), then the same agent again after declaring, as a careful
agent would on noticing the change, the newest gold session's evidence turn as superseding
the evidence turns of each earlier gold session. Reported both ways: how often the newest
evidence ranks above the older one (of the questions where both are in the ten rows),
session-level NDCG@10, and the newest evidence's presence.

With ``--episodes`` the declaration is made at session granularity, as the issue words it
("each answer session declared as superseding the earlier gold session"): every session is
also archived as an episode (the record of a session: its turns as history, their text as
the summary) before the first recall, and each gold session's episode is declared as
superseding the previous gold session's episode (one successor each, the record that
replaces it), besides the evidence turns above. An episode row counts for its session.

    .venv/bin/python -m bench.facts.knowledge_update --data ../shared/data/longmemeval-dev
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
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
DECLARED = "newest declared as superseding"


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


@dataclasses.dataclass
class Stored:
    """What one question's haystack became: the memory ids of each session's evidence
    turns, and (``--episodes``) each session's episode id."""

    evidence: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    episodes: dict[str, int] = dataclasses.field(default_factory=dict)

    def session_of(self, row: dict[str, Any]) -> str:
        """The session a recalled row belongs to: a turn's by its msg_id, an episode's by
        its ref."""
        by_ref = {f"ep:{episode}": sid for sid, episode in self.episodes.items()}
        return by_ref.get(str(row.get("ref", ""))) or str(row.get("id", "")).partition("#")[0]


async def _archive(
    session: ClientSession, agent: str, sid: str, date: str, turns: list[dict[str, Any]]
) -> int | None:
    """The session archived as an episode: its turns as history (the session's date on
    each), their text joined as the summary (the service cuts it to its bound)."""
    lines = [str(t.get("content") or "").strip() for t in turns]
    history = [
        {"role": t.get("role") or "user", "content": line, "timestamp": date}
        for t, line in zip(turns, lines, strict=True)
        if line
    ]
    if not history:
        return None
    reply = await call_json(
        session,
        "archive_episode",
        {
            "agent_id": agent,
            "summary": "\n".join(e["content"] for e in history),
            "history": history,
        },
    )
    episode = reply.body.get("episode_id")
    return int(episode) if episode is not None else None


async def _store(session: ClientSession, agent: str, q: Question, episodes: bool = False) -> Stored:
    """Every turn stored (and, with ``episodes``, every session archived)."""
    stored = Stored()
    evidence = stored.evidence
    for sid, date, turns in q.sessions:
        if episodes and (episode := await _archive(session, agent, sid, date, turns)):
            stored.episodes[sid] = episode
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
    return stored


async def _declare(session: ClientSession, agent: str, q: Question, stored: Stored) -> int:
    """The newest gold session's first evidence turn supersedes the earlier gold sessions'
    evidence turns; each gold session's episode (when archived) supersedes the previous
    gold session's. How many relations the service made."""
    evidence, episodes = stored.evidence, stored.episodes
    newest = evidence.get(q.gold[-1], [])
    relations = [
        {"subject": f"mem:{newest[0]}", "predicate": "supersedes", "object": f"mem:{old}"}
        for sid in q.gold[:-1]
        for old in evidence.get(sid, [])
        if newest
    ]
    relations += [
        {
            "subject": f"ep:{episodes[new]}",
            "predicate": "supersedes",
            "object": f"ep:{episodes[old]}",
        }
        for old, new in zip(q.gold, q.gold[1:], strict=False)
        if old in episodes and new in episodes
    ]
    if not relations:
        return 0
    reply = await call_json(
        session,
        "declare_associations",
        {"agent_id": agent, "associations": {"relations": relations[:64]}},
    )
    return len(reply.body.get("relations", []))


def marks(q: Question, ids: Sequence[str], sessions: Sequence[str] | None = None) -> str:
    """The ten rows best first: ``N`` a row of the newest gold session, ``O`` of an older
    one, ``-`` anything else; ``*`` an evidence turn (``has_answer``), ``e`` an episode.
    ``sessions``: each row's session (default: its msg_id's)."""
    evidence = {
        f"{sid}#{i}"
        for sid, _, turns in q.sessions
        for i, t in enumerate(turns)
        if t.get("has_answer")
    }
    out = []
    for n, full in enumerate(ids):
        sid = sessions[n] if sessions is not None else full.partition("#")[0]
        mark = "N" if sid == q.gold[-1] else "O" if sid in q.gold[:-1] else "-"
        out.append(mark + ("*" if full in evidence else "e" if "#" not in full and sid else ""))
    return " ".join(out)


async def _score(
    session: ClientSession, agent: str, q: Question, stored: Stored, *tallies: Scored
) -> str:
    """One recall of the question, scored into each of ``tallies``; its :func:`marks`."""
    reply = await call_json(
        session, "recall", {"agent_id": agent, "query": q.question, "limit": LIMIT}
    )
    rows = list(reversed(reply.body.get("messages") or []))  # best first
    ranked = [stored.session_of(row) for row in rows]
    newest = next((i for i, s in enumerate(ranked) if s == q.gold[-1]), None)
    older = next((i for i, s in enumerate(ranked) if s in q.gold[:-1]), None)
    for into in tallies:
        into.questions += 1
        into.ndcg += ndcg_at_k(ranked, set(q.gold), LIMIT)
        into.newest_found += newest is not None
        if newest is not None and older is not None:
            into.both += 1
            into.newest_first += newest < older
    return marks(q, [str(row.get("id", "")) for row in rows], ranked)


async def run(
    questions: Sequence[Question], first: int = 0, episodes: bool = False
) -> dict[str, Scored]:
    """Both runs over ``questions``; each question's own line goes to stderr as it ends
    (numbered from ``first``), so a run cut short still says what it measured."""
    plain, declared = Scored(), Scored()
    with running_service(ServiceOptions()) as service:
        async with mcp_session(service.mcp_url, service.key) as session:
            for n, q in enumerate(questions):
                agent = f"ku{n}"
                stored = await _store(session, agent, q, episodes)
                one = {"nothing declared": Scored(), DECLARED: Scored()}
                before = await _score(session, agent, q, stored, plain, one["nothing declared"])
                made = await _declare(session, agent, q, stored)
                after = await _score(session, agent, q, stored, declared, one[DECLARED])
                print(f"question {first + n + 1}:", _line(one), file=sys.stderr)
                print(f"  rows before: {before}", file=sys.stderr)
                print(f"  {made} declared; rows after: {after}", file=sys.stderr, flush=True)
    return {"nothing declared": plain, "newest declared as superseding": declared}


def _line(results: dict[str, Scored]) -> str:
    """One question's outcome: both in top 10, newest above older, NDCG@10, per run."""
    return "; ".join(
        f"{name}: both={s.both} newest_first={s.newest_first} ndcg={s.ndcg:.3f}"
        for name, s in results.items()
    )


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
    parser.add_argument("--skip", type=int, default=0, help="start after this many questions")
    parser.add_argument(
        "--episodes",
        action="store_true",
        help="archive every session as an episode and declare gold episodes superseding",
    )
    args = parser.parse_args(argv)
    questions = load(args.data)[args.skip : args.skip + args.questions]
    print(table(asyncio.run(run(questions, args.skip, args.episodes))))


if __name__ == "__main__":
    main()
