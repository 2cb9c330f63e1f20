"""LongMemEval (development subset) retrieval through the real MCP/HTTP path, with and
without passages, in one run (docs/benchmarks/quality.md, "Passages").

``python -m bench.quality.longmemeval [--questions N] [--out PATH]``

Protocol (``../shared/data/longmemeval-dev/README.md``): one agent per question, every turn
of its haystack stored with ``store`` (``message.id`` = ``<session>#<turn>``, content
``"<role>: <text>"``, ``message.timestamp`` = its session's date) by the local embedder,
the queue drained (passages built), then the question asked as one ``recall``
(``limit: 10``) twice: on the service as configured (passages read) and on the same data
with ``CPERSONA_PASSAGES=false`` (recall reads none: the records' own vectors, as before
passages). Scores: session NDCG@10 and recall_any@5 (a row's session is relevant when it
is in ``answer_session_ids``; sessions ranked by their first row), turn NDCG@10 (turns with
``has_answer``). ``--questions`` takes that many, round-robin over the six types.
``--env NAME=VALUE`` (repeatable) asks once more on the same data with that setting added
(one variant each), so a ranking setting is measured before and after in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import Conversation, Question, Turn
from bench.harness import serving as harness
from bench.harness.cli import write_json
from bench.harness.client import call_json, mcp_sessions
from bench.harness.snapshot import run_on_snapshot
from bench.quality.probe import store_all
from bench.quality.scoring import _first_k_unique, ndcg_at_k

DATA = Path("../shared/data/longmemeval-dev")
DEFAULT_OUT = Path("bench/results/longmemeval.json")


def load(data: Path, count: int) -> list[tuple[Conversation, dict[str, Any]]]:
    """``count`` questions, round-robin over the types in file order; each as a one-question
    conversation with its raw record."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(data.glob("*_*.json")):
        if path.name == "manifest.json":
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        by_type.setdefault(record["question_type"], []).append(record)
    picked: list[dict[str, Any]] = []
    while len(picked) < count and any(by_type.values()):
        for records in by_type.values():
            if records and len(picked) < count:
                picked.append(records.pop(0))
    return [(_conversation(r), r) for r in picked]


def _conversation(record: dict[str, Any]) -> Conversation:
    turns, relevant = [], []
    sessions = zip(
        record["haystack_session_ids"],
        record["haystack_dates"],
        record["haystack_sessions"],
        strict=True,
    )
    for session_id, date, session in sessions:
        for n, turn in enumerate(session):
            dia_id = f"{session_id}#{n}"
            turns.append(Turn(dia_id, f"{turn['role']}: {turn['content']}", date))
            if turn.get("has_answer"):
                relevant.append(dia_id)
    question = Question(record["question_id"], 0, 0, record["question"], tuple(relevant))
    return Conversation(record["question_id"], tuple(turns), (question,))


async def _ask(
    service: harness.Service, items: Sequence[tuple[Conversation, dict[str, Any]]]
) -> list[dict[str, Any]]:
    rows = []
    async with mcp_sessions(service.mcp_url, service.key, 1) as (session,):
        for conv, record in items:
            args = {"agent_id": conv.sample_id, "query": record["question"], "limit": 10}
            reply = await call_json(session, "recall", args)
            ranked = [str(m.get("id", "")) for m in reversed(reply.body.get("messages") or [])]
            rows.append(_scores(ranked, conv.questions[0].relevant, record))
    return rows


def _scores(ranked: list[str], turns: Sequence[str], record: dict[str, Any]) -> dict[str, Any]:
    sessions = [r.split("#")[0] for r in ranked if "#" in r]
    gold = set(record["answer_session_ids"])
    top = _first_k_unique(sessions, 10)
    return {
        "question_id": record["question_id"],
        "type": record["question_type"],
        "session_ndcg10": ndcg_at_k(top, gold, 10),
        "recall_any5": float(bool(set(top[:5]) & gold)),
        "turn_ndcg10": ndcg_at_k([r for r in ranked if "#" in r], set(turns), 10),
    }


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return round(sum(r[key] for r in rows) / len(rows), 4) if rows else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    items = load(args.data, args.questions)
    base = {"CPERSONA_EMBEDDING_MODE": "local"}
    out: dict[str, Any] = {"questions": len(items), "variants": {}}
    with harness.fresh_tenant(args.code, "lme", base) as (data_dir, key):
        with harness.serve_on(args.code, data_dir, key, base) as service:
            print(f"storing {sum(len(c.turns) for c, _ in items)} turns ...", file=sys.stderr)
            out["store"] = asyncio.run(store_all(service, [c for c, _ in items], 2))
            print(f"  stored and drained in {out['store']['total_seconds']} s", file=sys.stderr)
            with_passages = asyncio.run(_ask(service, items))
        off = {**base, "CPERSONA_PASSAGES": "false"}
        with harness.serve_on(args.code, data_dir, key, off) as service:
            without = asyncio.run(_ask(service, items))
        answers = [("without passages", without), ("with passages", with_passages)]
        for name, value in _settings(args.env):
            with harness.serve_on(args.code, data_dir, key, {**base, name: value}) as service:
                answers.append((f"with {name}={value}", asyncio.run(_ask(service, items))))
    for name, rows in answers:
        keys = ("session_ndcg10", "recall_any5", "turn_ndcg10")
        out["variants"][name] = {"metrics": {k: _mean(rows, k) for k in keys}, "per_question": rows}
        print(f"{name}: {out['variants'][name]['metrics']}", file=sys.stderr)
    return out


def _settings(pairs: Sequence[str]) -> list[tuple[str, str]]:
    """``NAME=VALUE`` strings as pairs; BenchError for one without ``=``."""
    out = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise harness.BenchError(f"--env wants NAME=VALUE, got {pair!r}")
        out.append((name.strip(), value.strip()))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--env", action="append", default=[], help="one more variant: NAME=VALUE")
    args = parser.parse_args(argv)
    write_json(args.out, run_on_snapshot(args, run, import_here=True))


if __name__ == "__main__":
    main()
