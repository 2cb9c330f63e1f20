"""Recall latency of an agent beside another with many passages, passages on and off
(issue 34; docs/benchmarks/passages.md, "Recall beside an agent with many passages").

The passages' HNSW index holds every agent's passages; recall must not pay for another
agent's long records. A fresh data directory gets one tenant and two agents of the
synthetic corpus (:mod:`bench.latency.loader`): ``many`` (10,000 memories, every fifth
given passages by :mod:`bench.latency.passages`: about 8,000) and ``none`` (1,000
memories, no passage). A real ``serve`` (local embeddings, every query embedded) answers
one client's ``recall`` (limit 10) of unique synthetic queries for each agent, with
passages on (the default) and then off (``CPERSONA_PASSAGES=false``, the same data),
alternating rounds so drift on a shared machine falls on both alike.

    .venv/bin/python -m bench.latency.passage_neighbours [--queries 200] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import serving as harness
from bench.latency import loader as corpus, passages
from bench.latency.probe import LOCAL, Target, measure, recall_request
from bench.latency.queries import query_texts
from bench.latency.scenarios import PASSAGES_OFF, embedded_postgres

AGENTS = (("many", 10_000), ("none", 1_000))
LONG_SHARE = 0.2


def _load(url: str) -> int:
    plan = [corpus.AgentLoad("scale", name, rows) for name, rows in AGENTS]
    asyncio.run(corpus.load(url, plan, rebuild_indexes=False))
    return passages.add(url, "many", LONG_SHARE)


def _round(home: tuple[Path, str], env: dict[str, str], texts: list[str]) -> dict[str, Any]:
    """One serve with ``env``; one client's recalls of ``texts`` for each agent."""
    data_dir, key = home
    with harness.serve_on(Path.cwd(), data_dir, key, env, stop_postgres=False) as service:
        out = {}
        half = len(texts) // len(AGENTS)
        for n, (agent, _) in enumerate(AGENTS):
            chunk = texts[n * half : (n + 1) * half]
            run = asyncio.run(
                measure(service, [Target(key, agent)], chunk, 1, 10, 600.0, recall_request)
            )
            out[agent] = run["latency"]
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"rounds": []}
    with contextlib.ExitStack() as stack:
        home = stack.enter_context(harness.fresh_tenant(Path.cwd(), "scale", LOCAL))
        url = stack.enter_context(embedded_postgres(home[0]))
        print("loading ...", file=sys.stderr)
        results["passages"] = _load(url)
        per = (args.queries + 10) * len(AGENTS)
        for number in range(args.rounds):
            for label, env in (("on", dict(LOCAL)), ("off", {**LOCAL, **PASSAGES_OFF})):
                texts = query_texts(per, args.seed + 2 * number + (label == "off"))
                print(f"round {number + 1}: passages {label} ...", file=sys.stderr)
                measured = _round(home, env, texts)
                results["rounds"].append({"passages": label, **measured})
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.passage_neighbours", description=__doc__
    )
    parser.add_argument("--queries", type=int, default=200, help="measured recalls per agent")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=34)
    result = run(parser.parse_args(argv))
    print("passages", result["passages"])
    for row in result["rounds"]:
        for agent, _ in AGENTS:
            print(row["passages"], agent, json.dumps(row[agent]))


if __name__ == "__main__":
    main()
