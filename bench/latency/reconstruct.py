"""reconstruct latency: p50/p95/p99 over MCP with one client (issue 32's target: p95 <= 40
ms at 10k memories, the query's embedding included).

A fresh data directory gets one tenant; the synthetic corpus of :mod:`bench.latency.loader`
(clustered vectors of the local model's width, so nothing is re-embedded) is bulk-loaded
into one agent; a real ``serve`` runs with ``CPERSONA_EMBEDDING_MODE=local`` so every query
is embedded by the model; unique query texts go through the official MCP client, one
``reconstruct`` at a time (defaults: count 10, top_k 20, the walk on; nothing declared),
then as many ``recall`` calls (limit 10) on the same service, for scale: on a shared
machine the two are comparable where absolute times are not.

    .venv/bin/python -m bench.latency.reconstruct [--size 10k] [--queries 300]
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
from bench.latency import loader as corpus
from bench.latency.probe import LOCAL, Target, measure, recall_request
from bench.latency.queries import query_texts
from bench.latency.scenarios import TIERS, embedded_postgres


def reconstruct_request(target: Target, text: str) -> tuple[str, dict[str, Any]]:
    """``reconstruct`` of ``text`` with its defaults."""
    return "reconstruct", {"agent_id": target.agent, "query": text}


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows = TIERS[args.size]
    agent = f"agent-{args.size}"
    code = Path.cwd()
    with contextlib.ExitStack() as stack:
        data_dir, key = stack.enter_context(harness.fresh_tenant(code, "scale", LOCAL))
        url = stack.enter_context(embedded_postgres(data_dir))
        print(f"loading {rows} rows ...", file=sys.stderr)
        asyncio.run(
            corpus.load(url, [corpus.AgentLoad("scale", agent, rows)], rebuild_indexes=False)
        )
        harness.settle(harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL)))
        service = stack.enter_context(
            harness.serve_on(code, data_dir, key, LOCAL, stop_postgres=False)
        )
        per = args.queries + args.warmup
        texts = query_texts(2 * per, args.seed)
        target = [Target(key, agent)]
        runs = {}
        for n, (name, request) in enumerate(
            (("reconstruct", reconstruct_request), ("recall", recall_request))
        ):
            chunk = texts[n * per : (n + 1) * per]
            runs[name] = asyncio.run(
                measure(service, target, chunk, 1, args.warmup, args.max_seconds, request)
            )
            runs[name].pop("samples_s", None)
    return {"size": args.size, "rows": rows, **runs}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.reconstruct", description=__doc__
    )
    parser.add_argument("--size", choices=sorted(TIERS), default="10k")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    result = run(parser.parse_args(argv))
    for tool in ("reconstruct", "recall"):
        print(tool, json.dumps(result[tool]["latency"]))
        print(tool, "cpu", json.dumps(result[tool]["cpu"]))


if __name__ == "__main__":
    main()
