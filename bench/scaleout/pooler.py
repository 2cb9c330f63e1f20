"""The recall latency cost of PgBouncer in transaction mode, with and without prepared
statements.

``python -m bench.scaleout.pooler [--rows 10000] [--queries 400] [--clients 1,8] [--repeat 2]
[--embedding local,none]``

One database (:mod:`bench.scaleout.setup`), three ``serve`` processes on it at once, one
per way of reaching Postgres:

* ``direct, prepared``: straight to Postgres, asyncpg's statement cache on (each distinct
  query is parsed and planned once per connection, then only bound and executed);
* ``direct, unprepared``: straight to Postgres with ``CPERSONA_DB_POOLER=pgbouncer``, i.e.
  no named prepared statements: isolates what giving up the statement cache costs;
* ``pgbouncer``: through a real PgBouncer 1.18 (:mod:`tests.servers.proxies`) in transaction
  mode, which requires the setting: the cache's cost plus the extra hop.

PgBouncer 1.18 cannot carry prepared statements, so "with prepared statements" can only
be measured direct. Each pass measures every variant with 1 and with 8 clients in turn
(the order rotates between passes, so drift of the shared machine spreads evenly); every
query text is used once. The tables give the median over passes.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import serving as harness
from bench.harness.machine import record_end
from bench.harness.markdown import machine_line, table
from bench.latency.queries import query_texts
from bench.scaleout.setup import (
    Loaded,
    common_options,
    finish_options,
    loaded_database,
    main_for,
    measure_recalls,
    numbers,
    results_head,
    serve_env,
    serve_many,
)
from tests.servers.proxies import pgbouncer

DEFAULT_OUT = Path("bench/results/pooler.json")
VARIANTS = ("direct, prepared", "direct, unprepared", "pgbouncer")


def _variant_env(variant: str, loaded: Loaded, pooled_url: str, embedding: str) -> dict[str, str]:
    if variant == "direct, prepared":
        return serve_env(loaded.url, embedding)
    if variant == "direct, unprepared":
        return serve_env(loaded.url, embedding, CPERSONA_DB_POOLER="pgbouncer")
    return serve_env(
        pooled_url,
        embedding,
        CPERSONA_DB_POOLER="pgbouncer",
        CPERSONA_MIGRATION_DATABASE_URL=loaded.url,
    )


def _passes(
    args: argparse.Namespace, loaded: Loaded, services: dict[str, harness.Service], seed: int
) -> list[dict[str, Any]]:
    """Every pass: each client count, each variant in the pass's rotated order."""
    per_run = args.queries + args.warmup
    texts = query_texts(per_run * args.repeat * len(args.clients) * len(VARIANTS), seed)
    runs, n = [], 0
    for repetition in range(args.repeat):
        order = VARIANTS[repetition % 3 :] + VARIANTS[: repetition % 3]
        for clients in args.clients:
            for variant in order:
                print(f"    pass {repetition + 1}: {variant}, {clients} client(s)", file=sys.stderr)
                chunk = texts[n * per_run : (n + 1) * per_run]
                run = measure_recalls(services[variant], loaded, chunk, clients, args)
                runs.append({"variant": variant, "pass": repetition + 1, **run})
                n += 1
    return runs


def one_mode(
    args: argparse.Namespace, loaded: Loaded, pooled_url: str, embedding: str, seed: int
) -> dict[str, Any]:
    """The three variants side by side in one embedding mode."""
    print(f"  embeddings {embedding}: starting the three services ...", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        services = {
            variant: stack.enter_context(
                serve_many(args, loaded, 1, _variant_env(variant, loaded, pooled_url, embedding))
            )[0]
            for variant in VARIANTS
        }
        return {"embedding": embedding, "runs": _passes(args, loaded, services, seed)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results = results_head(args, modes=[])
    with loaded_database(args) as loaded:
        results["load"] = loaded.load
        with pgbouncer(loaded.url, loaded.data_dir / "pgbouncer") as bouncer:
            pooled_url = bouncer.url("postgres")
            for n, embedding in enumerate(args.embedding):
                results["modes"].append(
                    one_mode(args, loaded, pooled_url, embedding, args.seed + n)
                )
    record_end(results, started)
    return results


def summary(mode: dict[str, Any], variant: str, clients: int) -> dict[str, float]:
    """Medians over passes of one variant and client count."""
    runs = [r for r in mode["runs"] if r["variant"] == variant and r["clients"] == clients]
    keys = ("throughput_per_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms")
    median = {k: statistics.median(r["latency"][k] for r in runs) for k in keys}
    median["failures"] = sum(sum(r["failures"].values()) for r in runs)
    median["passes"] = len(runs)
    return median


def markdown(results: dict[str, Any]) -> str:
    """One table per embedding mode; the last column is the p50 against direct, prepared."""
    columns = [
        *("Variant", "Clients", "Passes", "Calls/s", "Mean ms", "p50 ms", "p95 ms", "p99 ms"),
        *("Failures", "p50 vs direct, prepared"),
    ]
    lines = [
        "# The pooler's cost per recall",
        "",
        machine_line(results["machine"]) + f"; code {results['code']}.",
        "",
        f"Corpus: {results['load']['rows']:,} memories in one agent; `recall` limit 10, unique "
        "queries; medians over passes.",
    ]
    for mode in results["modes"]:
        rows = []
        for clients in results["options"]["clients"]:
            base = summary(mode, VARIANTS[0], clients)["p50_ms"]
            for variant in VARIANTS:
                s = summary(mode, variant, clients)
                rows.append(
                    [
                        variant,
                        clients,
                        int(s["passes"]),
                        f"{s['throughput_per_s']:.1f}",
                        *(f"{s[k]:.1f}" for k in ("mean_ms", "p50_ms", "p95_ms", "p99_ms")),
                        int(s["failures"]),
                        f"{s['p50_ms'] - base:+.1f} ms",
                    ]
                )
        lines += [
            "",
            f"## Embeddings `{mode['embedding']}`",
            "",
            *table(columns, "lr" + "r" * 8, rows),
        ]
    return "\n".join([*lines, ""])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = common_options("python -m bench.scaleout.pooler", __doc__, DEFAULT_OUT)
    add = parser.add_argument
    add("--queries", type=int, default=400, help="measured recalls per run (default: %(default)s)")
    add("--clients", default="1,8", help="client counts (default: %(default)s)")
    add("--repeat", type=int, default=2, help="passes over every variant (default: %(default)s)")
    args = parser.parse_args(argv)
    args.clients = numbers(parser, "--clients", args.clients, 64)
    finish_options(parser, args)
    if args.repeat < 1 or args.queries < 1:
        parser.error("--repeat and --queries must be positive")
    return args


if __name__ == "__main__":
    main_for(parse_args, run, markdown, None)
