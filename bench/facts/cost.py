"""Facts that change, their cost: recall p95 over MCP with one client at 10k memories,
with 0% and 10% superseded rows, and with ``as_of`` (issue 33's targets: within 5% and
within 15% of the plain recall).

A fresh data directory gets one tenant with two agents of ``--size`` memories each, the
synthetic corpus of :mod:`bench.latency.loader` (clustered vectors of the local model's
width, so nothing is re-embedded), the same rows in both. In agent ``chained``, every
tenth memory (by id) is superseded by the next one, in one INSERT of relations; agent
``plain`` has none. A real
``serve`` runs with ``CPERSONA_EMBEDDING_MODE=local`` so every query is embedded by the
model; unique query texts go through the official MCP client, one ``recall`` (limit 10)
at a time: ``plain`` (0%), ``chained`` (10%), and ``chained`` with ``as_of`` (the run's
start, so the reading holds every current row). The three runs alternate in ``--rounds``
rounds (the machine is shared: each sees the same load) and their samples are pooled.

    .venv/bin/python -m bench.facts.cost [--size 10k] [--queries 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.harness import serving as harness
from bench.harness.stats import latency_stats
from bench.latency import loader as corpus
from bench.latency.probe import LOCAL, Request, Target, measure, recall_request
from bench.latency.queries import query_texts
from bench.latency.scenarios import TIERS, embedded_postgres
from bench.latency.synthetic import FloatArray

TENANT = "facts"
SUPERSEDE = """
WITH agent AS (
    SELECT a.id, a.tenant_id FROM agents a JOIN tenants t ON t.id = a.tenant_id
    WHERE t.slug = $1 AND a.name = $2
), ordered AS (
    SELECT m.id, row_number() OVER (ORDER BY m.id) AS n
    FROM memories m WHERE m.agent_id = (SELECT id FROM agent)
)
INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate,
                       object_kind, object_id)
SELECT agent.tenant_id, agent.id, 'mem', newer.id, 'supersedes', 'mem', older.id
FROM ordered older JOIN ordered newer ON newer.n = older.n + 1 CROSS JOIN agent
WHERE older.n % $3 = 1
"""
"""Every ``$3``-th memory of the agent (by id) superseded by the next one: one successor
each, chains of two, ``1/$3`` of the rows superseded."""


def same_rows(
    plan: corpus.AgentLoad, seed: int, centres: FloatArray
) -> Iterator[tuple[list[str], list[bytes], list[datetime]]]:
    """Both agents get the same texts, vectors and timestamps (the synthetic corpus seeded
    as agent ``plain``'s), so the runs differ only in the supersessions."""
    return corpus._batches(dataclasses.replace(plan, agent="plain"), seed, centres)


async def supersede(url: str, agent: str, every: int) -> int:
    """Declare the supersessions in bulk (setup, not the path measured); the count."""
    conn = await corpus.connect(url)
    try:
        status = await conn.execute(SUPERSEDE, TENANT, agent, every)
        await conn.execute("VACUUM (ANALYZE) relations")
    finally:
        await conn.close()
    return int(status.split()[-1])


def as_of_request(moment: str) -> Request:
    """``recall`` (limit 10) read ``as_of`` ``moment``."""

    def request(target: Target, text: str) -> tuple[str, dict[str, Any]]:
        tool, args = recall_request(target, text)
        return tool, {**args, "as_of": moment}

    return request


def _pooled(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    samples = [x for part in parts for x in part["samples_s"]]
    wall = sum(part["wall_s"] for part in parts)
    failures = sum((collections.Counter(p["failures"]) for p in parts), collections.Counter())
    return {"latency": dataclasses.asdict(latency_stats(samples, wall)), "failures": failures}


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows = TIERS[args.size]
    code = Path.cwd()
    moment = datetime.now(UTC).isoformat(timespec="seconds")
    runs: list[tuple[str, str, Request]] = [
        ("0% superseded", "plain", recall_request),
        (f"{100 // args.every}% superseded", "chained", recall_request),
        (f"{100 // args.every}% superseded, as_of", "chained", as_of_request(moment)),
    ]
    with contextlib.ExitStack() as stack:
        data_dir, key = stack.enter_context(harness.fresh_tenant(code, TENANT, LOCAL))
        url = stack.enter_context(embedded_postgres(data_dir))
        print(f"loading 2 x {rows} rows ...", file=sys.stderr)
        plans = [corpus.AgentLoad(TENANT, name, rows) for name in ("plain", "chained")]
        asyncio.run(corpus.load(url, plans, rebuild_indexes=False, batches=same_rows))
        superseded = asyncio.run(supersede(url, "chained", args.every))
        service = stack.enter_context(
            harness.serve_on(code, data_dir, key, LOCAL, stop_postgres=False)
        )
        per = args.queries // args.rounds + args.warmup
        texts = query_texts(per * args.rounds * len(runs), args.seed)
        parts: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in runs}
        for r in range(args.rounds):
            for n, (label, agent, request) in enumerate(runs):
                start = (r * len(runs) + n) * per
                chunk = texts[start : start + per]
                print(f"  round {r + 1}: {label} ...", file=sys.stderr)
                parts[label].append(
                    asyncio.run(
                        measure(
                            service,
                            [Target(key, agent)],
                            chunk,
                            1,
                            args.warmup,
                            args.max_seconds,
                            request,
                        )
                    )
                )
    result = {label: _pooled(p) for label, p in parts.items()}
    return {"size": args.size, "rows": rows, "superseded": superseded, "as_of": moment, **result}


def table(result: dict[str, Any]) -> str:
    """The docs table: p50/p95 per run and the p95 ratio to the plain recall."""
    labels = [k for k in result if isinstance(result[k], dict)]
    base = result[labels[0]]["latency"]["p95_ms"]
    lines = [
        "| Run | Recalls | p50 ms | p95 ms | p95 vs 0% | Failures |",
        "|---|---|---|---|---|---|",
    ]
    for label in labels:
        stats = result[label]["latency"]
        ratio = stats["p95_ms"] / base - 1
        lines.append(
            f"| {label} | {stats['count']} | {stats['p50_ms']:.1f} | {stats['p95_ms']:.1f} "
            f"| {ratio:+.1%} | {sum(result[label]['failures'].values())} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.facts.cost", description=__doc__)
    parser.add_argument("--size", choices=sorted(TIERS), default="10k")
    parser.add_argument("--queries", type=int, default=300, help="measured recalls per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured recalls per round")
    parser.add_argument("--every", type=int, default=10, help="every Nth memory superseded")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--json", type=Path, help="also write the result here")
    result = run(parser.parse_args(argv))
    if result_path := parser.parse_args(argv).json:
        result_path.write_text(json.dumps(result, indent=2, default=dict))
    print(f"{result['rows']} memories per agent, {result['superseded']} superseded rows")
    print(table(result))


if __name__ == "__main__":
    main()
