"""Where LongMemEval gold turns rank, channel by channel, in the service's own recall
(docs/benchmarks/reconstruct.md, "Why two LongMemEval gold turns are missed").

``python -m bench.quality.lme_ranks [--ids ID,ID] [--out PATH]``

Stores the named questions' haystacks once (as ``bench.quality.longmemeval`` does: local
embedder, passages built), then asks each question as one ``recall`` under several
configurations of the same data, each a restart of the service with other settings:

* ``default``: the service as configured, ``limit`` 10 (what the benchmarks score);
* ``fused@100``: the default ranking read 100 deep (autocut off, so it cuts nothing);
* ``vector alone``: full text off (``CPERSONA_FTS_ENABLED=false``) and the vector channel
  100 deep: rows ordered by their length-neutral cosine, gated at the vector threshold;
* ``lexical alone``: no embedder (``CPERSONA_EMBEDDING_MODE=none``): the full-text and
  keyword channels alone;
* ``rrf@10``: the spec's reciprocal-rank fusion (``CPERSONA_RECALL_MODE=rrf``), every
  channel ``limit`` deep: CPersona 2.6.14's default fusion;
* ``seats N``: the default with ``CPERSONA_HYBRID_VECTOR_SEATS=N`` (docs/tools.md, "Vector
  seats").

``--cpersona`` runs CPersona 2.6.14 on the same turns instead (``run_cpersona``).

For every gold turn (``has_answer``) it reports its rank (1-based, absent: ``None``) and
``match_reason`` in each; for each configuration the first ten rows with their lengths.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.harness import serving as harness
from bench.harness.cli import write_json
from bench.harness.client import call_json, mcp_sessions
from bench.harness.snapshot import run_on_snapshot
from bench.quality.longmemeval import DATA, _conversation
from bench.quality.probe import store_all

DEFAULT_IDS = ("09d032c9", "gpt4_31ff4165")
DEFAULT_OUT = Path("bench/results/lme_ranks.json")
BASE = {"CPERSONA_EMBEDDING_MODE": "local"}
NO_AUTOCUT = {"CPERSONA_AUTOCUT_ENABLED": "false"}
CONFIGS: Mapping[str, tuple[Mapping[str, str], int]] = {
    "default": ({}, 10),
    "fused@100": (NO_AUTOCUT, 100),
    "vector alone": (
        {**NO_AUTOCUT, "CPERSONA_FTS_ENABLED": "false", "CPERSONA_RECALL_VECTOR_DEPTH": "100"},
        100,
    ),
    "lexical alone": ({**NO_AUTOCUT, "CPERSONA_EMBEDDING_MODE": "none"}, 100),
    "rrf@10": ({"CPERSONA_RECALL_MODE": "rrf"}, 10),
    "seats 3": ({"CPERSONA_HYBRID_VECTOR_SEATS": "3"}, 10),
    "seats 5": ({"CPERSONA_HYBRID_VECTOR_SEATS": "5"}, 10),
}


def load_ids(data: Path, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The raw records of the questions ``ids`` (file names end in ``_<id>.json``)."""
    import json

    records = []
    for question_id in ids:
        (path,) = sorted(data.glob(f"*_{question_id}.json"))
        records.append(json.loads(path.read_text(encoding="utf-8")))
    return records


async def _ask(
    service: harness.Service, records: Sequence[dict[str, Any]], limit: int
) -> dict[str, list[dict[str, Any]]]:
    """Each question's rows best first: id, length, match_reason."""
    out: dict[str, list[dict[str, Any]]] = {}
    async with mcp_sessions(service.mcp_url, service.key, 1) as (session,):
        for record in records:
            agent = record["question_id"]
            args = {"agent_id": agent, "query": record["question"], "limit": limit}
            reply = await call_json(session, "recall", args)
            rows = list(reversed(reply.body.get("messages") or []))
            out[agent] = [
                {
                    "id": str(m.get("id", "")),
                    "chars": len(str(m.get("content", ""))),
                    "reason": m.get("match_reason"),
                }
                for m in rows
            ]
    return out


def _gold(record: dict[str, Any]) -> list[str]:
    conv = _conversation(record)
    return list(conv.questions[0].relevant)


def _report(
    records: Sequence[dict[str, Any]], answers: Mapping[str, Mapping[str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for record in records:
        agent = record["question_id"]
        gold = _gold(record)
        per: dict[str, Any] = {"question": record["question"], "gold": {}, "top10": {}}
        for name, by_agent in answers.items():
            rows = by_agent[agent]
            ids = [r["id"] for r in rows]
            per["top10"][name] = rows[:10]
            for turn in gold:
                rank = ids.index(turn) + 1 if turn in ids else None
                reason = rows[rank - 1]["reason"] if rank else None
                per["gold"].setdefault(turn, {})[name] = {"rank": rank, "reason": reason}
        report[agent] = per
    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    records = load_ids(args.data, args.ids)
    convs = [_conversation(r) for r in records]
    answers: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with harness.fresh_tenant(args.code, "lmeranks", BASE) as (data_dir, key):
        with harness.serve_on(args.code, data_dir, key, BASE) as service:
            print(f"storing {sum(len(c.turns) for c in convs)} turns ...", file=sys.stderr)
            stored = asyncio.run(store_all(service, convs, 2))
            print(f"  stored and drained in {stored['total_seconds']} s", file=sys.stderr)
        for name, (env, limit) in CONFIGS.items():
            with harness.serve_on(args.code, data_dir, key, {**BASE, **env}) as service:
                answers[name] = asyncio.run(_ask(service, records, limit))
            print(f"  asked: {name}", file=sys.stderr)
    report = _report(records, answers)
    for agent, per in report.items():
        print(agent, per["question"], file=sys.stderr)
        for turn, ranks in per["gold"].items():
            line = ", ".join(f"{n}: {r['rank']}" for n, r in ranks.items())
            print(f"  {turn}: {line}", file=sys.stderr)
    return {"store": stored, "report": report}


def run_cpersona(args: argparse.Namespace) -> dict[str, Any]:
    """CPersona 2.6.14 on the same turns (its own store, the same MiniLM vectors over
    HTTP), each question one ``recall`` (``limit`` 10) with ``trace``: its rows and the
    trace of every arm, to read which arm brought each gold turn."""
    from bench.harness import cpersona
    from bench.quality import side_by_side as sbs

    records = load_ids(args.data, args.ids)
    convs = [_conversation(r) for r in records]
    out: dict[str, Any] = {}
    with sbs.cpersona_service(cpersona.DEFAULT_VENV, False) as service:
        stored = sbs.Stored()
        jobs = sbs.jobs_of(convs, lambda c: c.sample_id, None)
        out["store"] = asyncio.run(sbs.store_all(service, jobs, 2, stored))
        out["refs"] = {a: {r: sorted(t) for r, t in m.items()} for a, m in stored.turns_of.items()}
        out["answers"] = asyncio.run(_ask_traced(service, records))
    for record in records:
        agent = record["question_id"]
        ids = [str(m.get("id", "")) for m in out["answers"][agent].get("messages") or []]
        shown = [turn for turn in _gold(record) if turn in ids]
        print(agent, "gold shown:", shown, file=sys.stderr)
    return out


async def _ask_traced(
    service: harness.Service, records: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with mcp_sessions(service.mcp_url, service.key, 1) as (session,):
        for record in records:
            agent = record["question_id"]
            args = {"agent_id": agent, "query": record["question"], "limit": 10, "trace": True}
            out[agent] = dict((await call_json(session, "recall", args)).body)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ids", type=lambda s: tuple(s.split(",")), default=DEFAULT_IDS)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cpersona", action="store_true", help="CPersona 2.6.14 instead")
    args = parser.parse_args(argv)
    write_json(
        args.out, run_on_snapshot(args, run_cpersona if args.cpersona else run, import_here=True)
    )


if __name__ == "__main__":
    main()
