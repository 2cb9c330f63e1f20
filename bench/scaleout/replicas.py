"""Recalls/s and stores/s through HAProxy with 1 and with 3 ``serve`` replicas.

``python -m bench.scaleout.replicas [--replicas 1,3] [--clients 8] [--rows 10000] [--recalls 400]
[--stores 1000] [--embedding local,none]``

One database for the whole run (:mod:`bench.scaleout.setup`: ``--rows`` memories of one
agent, bulk-loaded). For each embedding mode and replica count, that many ``python -m
service serve`` processes start on it (external database, ``DATABASE_URL``), a real
HAProxy (:mod:`tests.servers.proxies`, round robin, ``/readyz`` health checks) goes in front, and
``--clients`` official MCP clients, each its own session and HTTP connection, call
``recall`` (unique queries, limit 10) and then ``store`` (short texts, each client its own
agent) through the load balancer. The same data, the same queries' kind, one run: only
the number of replicas changes. CPU is the whole machine's and the embedded Postgres's
(the replicas are the rest).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness.machine import record_end
from bench.harness.markdown import machine_line, table
from bench.latency.queries import query_texts
from bench.scaleout.setup import (
    Loaded,
    at,
    common_options,
    finish_options,
    loaded_database,
    main_for,
    measure_recalls,
    measure_stores,
    numbers,
    results_head,
    serve_env,
    serve_many,
)
from tests.servers.proxies import haproxy

DEFAULT_OUT = Path("bench/results/scaleout.json")


def one_configuration(
    args: argparse.Namespace, loaded: Loaded, embedding: str, replicas: int, texts: list[str]
) -> dict[str, Any]:
    """``replicas`` serve processes behind HAProxy: recalls, then stores."""
    env = serve_env(loaded.url, embedding, CPERSONA_DB_POOL_MAX=str(args.pool_max))
    with (
        serve_many(args, loaded, replicas, env) as services,
        haproxy(
            [int(s.base_url.rsplit(":", 1)[1]) for s in services], loaded.data_dir / "lb"
        ) as lb,
    ):
        lb.wait_all_up()
        front = at(services[0], lb.base_url)
        print(f"  {embedding}, {replicas} replica(s): recalls ...", file=sys.stderr)
        recalls = measure_recalls(front, loaded, texts, args.clients, args)
        print(f"  {embedding}, {replicas} replica(s): stores ...", file=sys.stderr)
        stores = measure_stores(front, loaded, args.clients, f"{embedding}-{replicas}r", args)
    return {"embedding": embedding, "replicas": replicas, "recall": recalls, "store": stores}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results = results_head(args, runs=[])
    per_run = args.recalls + args.warmup
    with loaded_database(args) as loaded:
        results["load"] = loaded.load
        n = 0
        for embedding in args.embedding:
            for replicas in args.replicas:
                texts = query_texts(per_run, args.seed + n)
                results["runs"].append(one_configuration(args, loaded, embedding, replicas, texts))
                n += 1
    record_end(results, started)
    return results


def markdown(results: dict[str, Any]) -> str:
    """The runs as one table: recall and store throughput and latency per configuration."""
    columns = [
        *("Embeddings", "Replicas", "Clients", "Recalls/s", "Recall p50 ms", "Recall p95 ms"),
        *(
            "Stores/s",
            "Store p50 ms",
            "Store p95 ms",
            "Failures",
            "Machine cores",
            "Postgres cores",
        ),
    ]
    rows = []
    for r in results["runs"]:
        rec, sto = r["recall"], r["store"]
        failures = sum(rec["failures"].values()) + sto["outcomes"].get("error", 0)
        pg = sto["cpu"].get("postgres")
        rows.append(
            [
                r["embedding"],
                r["replicas"],
                rec["clients"],
                f"{rec['latency']['throughput_per_s']:.1f}",
                f"{rec['latency']['p50_ms']:.1f}",
                f"{rec['latency']['p95_ms']:.1f}",
                f"{sto['latency']['throughput_per_s']:.1f}",
                f"{sto['latency']['p50_ms']:.1f}",
                f"{sto['latency']['p95_ms']:.1f}",
                failures,
                f"{sto['cpu']['machine']['cores']:.2f}",
                "n/a" if pg is None else f"{pg['cores']:.2f}",
            ]
        )
    lines = [
        "# Scale-out: replicas behind HAProxy",
        "",
        machine_line(results["machine"]) + f"; code {results['code']}.",
        "",
        f"Corpus: {results['load']['rows']:,} memories in one agent. CPU columns: the store phase.",
        "",
        *table(columns, "l" + "r" * 11, rows),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = common_options("python -m bench.scaleout.replicas", __doc__, DEFAULT_OUT)
    add = parser.add_argument
    add("--replicas", default="1,3", help="replica counts (default: %(default)s)")
    add("--clients", type=int, default=8, help="concurrent clients (default: %(default)s)")
    add("--recalls", type=int, default=400, help="measured recalls per run (default: %(default)s)")
    add("--stores", type=int, default=1000, help="measured stores per run (default: %(default)s)")
    add("--pool-max", type=int, default=10, help="CPERSONA_DB_POOL_MAX of each replica")
    args = parser.parse_args(argv)
    args.replicas = numbers(parser, "--replicas", args.replicas, 16)
    finish_options(parser, args)
    if not 1 <= args.clients <= 64 or args.recalls < 1 or args.stores < 1:
        parser.error("--clients takes 1 to 64; --recalls and --stores must be positive")
    return args


if __name__ == "__main__":
    main_for(parse_args, run, markdown, None)
