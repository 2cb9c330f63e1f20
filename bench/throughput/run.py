"""Run the benchmark suite: ``python -m bench.throughput.run [--quick] [--workers N] [--out PATH]``.

Starts the real service (embedded Postgres in a fresh temporary directory, or
``--database-url``), measures store throughput/latency with 1 and 8 MCP
clients for short and medium texts, list_memories latency, and cold/warm
start; prints Markdown tables and writes JSON (plus the tables next to it).

The parts: :mod:`bench.throughput.store` (the measurements), :mod:`bench.throughput.summary`
(medians over ``--repeat`` passes), :mod:`bench.throughput.report` (Markdown).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.texts import SIZES, TextSource
from bench.harness import serving as harness
from bench.harness.cli import env_pair, run_or_exit, write_results
from bench.harness.machine import machine_facts, record_end
from bench.throughput.model_ceiling import model_ceiling
from bench.throughput.report import markdown
from bench.throughput.store import StorePlan, measure_starts, run_repetition
from bench.throughput.summary import summarise

DEFAULT_OUT = Path("bench/results/latest.json")
FULL = {"calls": 2000, "warmup": 100, "list_calls": 200, "starts": 3, "max_seconds": 300.0}
BUSY_WARNING_CORES = 0.25
MAX_REPEAT = 10
MAX_WORKERS = 16
QUICK = {"calls": 200, "warmup": 20, "list_calls": 50, "starts": 1, "max_seconds": 60.0}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; unset sizes take the --quick or full defaults."""
    parser = argparse.ArgumentParser(prog="python -m bench.throughput.run", description=__doc__)
    add = parser.add_argument
    add("--quick", action="store_true", help="small smoke run (200 calls per configuration)")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON result file (default: %(default)s)")
    add("--calls", type=int, help="measured store calls per configuration (default 2000)")
    add("--warmup", type=int, help="unmeasured store calls per configuration (default 100)")
    add("--list-calls", type=int, help="measured list_memories calls per variant (default 200)")
    add("--clients", default="1,8", help="client counts, comma-separated (default: %(default)s)")
    add(
        "--sizes",
        default="short,medium",
        help="text sizes: short, medium (synthetic), dialogue (LoCoMo turns); default: %(default)s",
    )
    add("--max-seconds", type=float, help="time limit per measured phase (default 300)")
    add("--starts", type=int, help="cold and warm start repetitions each (default 3)")
    add(
        "--repeat",
        type=int,
        default=1,
        help="full passes, each on a fresh service; tables show medians (default: %(default)s)",
    )
    add("--skip-starts", action="store_true", help="do not measure cold/warm start")
    add("--seed", type=int, default=20261130, help="text generator seed (default: %(default)s)")
    add("--database-url", help="use this Postgres instead of an embedded one (data is left)")
    add(
        "--env",
        type=env_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="service setting",
    )
    add("--keep-data", action="store_true", help="keep the temporary data directory")
    add(
        "--workers",
        type=int,
        default=None,
        help="serve --workers N (sets CPERSONA_WORKERS; default: the service's own default)",
    )
    add(
        "--model-ceiling",
        type=int,
        default=0,
        metavar="TEXTS",
        help="first measure the bare local model's batch throughput on TEXTS texts",
    )
    add("--token-economy", action="store_true", help="then run bench.economy.run too")
    add(
        "--db-waits",
        action="store_true",
        help="sample what the embedded Postgres's backends wait for during each store phase "
        "(a query every 4 ms: off by default, so it never weighs on the throughput figures)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.repeat <= MAX_REPEAT:
        parser.error(f"--repeat takes 1 to {MAX_REPEAT}")
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        parser.error(f"--workers takes 1 to {MAX_WORKERS}")
    defaults = QUICK if args.quick else FULL
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def build_plans(args: argparse.Namespace) -> list[StorePlan]:
    """One plan per (size, client count)."""
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if any(s not in SIZES for s in sizes):
        raise SystemExit(f"--sizes takes {', '.join(SIZES)}")
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    if any(c < 1 or c > 64 for c in clients):
        raise SystemExit("--clients takes numbers between 1 and 64")
    return [
        StorePlan(n, SIZES[size], args.calls, args.warmup, args.max_seconds, args.db_waits)
        for size in sizes
        for n in clients
    ]


def service_options(args: argparse.Namespace) -> harness.ServiceOptions:
    """How to run the service: the database, ``--env`` settings and ``--workers``."""
    env = dict(args.env)
    if args.workers is not None:
        env["CPERSONA_WORKERS"] = str(args.workers)
    return harness.ServiceOptions(args.database_url, env, args.keep_data)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run everything; return the JSON-ready results."""
    options = service_options(args)
    plans = build_plans(args)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {
            "quick": args.quick,
            "calls": args.calls,
            "warmup": args.warmup,
            "list_calls": args.list_calls,
            "clients": args.clients,
            "sizes": args.sizes,
            "max_seconds": args.max_seconds,
            "seed": args.seed,
            "repeat": args.repeat,
            "database": "external" if args.database_url else "embedded",
            "service_env": dict(options.extra_env),
        },
    }
    busy = results["machine"]["busy_cores_before_start"]
    if busy > BUSY_WARNING_CORES:
        print(f"warning: {busy} cores already busy; results will be noisy", file=sys.stderr)
    if args.model_ceiling:
        print("measuring the bare model's batch throughput ...", file=sys.stderr)
        size = plans[0].size
        texts = TextSource(args.seed).batch(size, args.model_ceiling)
        results["model_ceiling"] = {"size": size, **model_ceiling(texts)}
    repetitions = []
    for n in range(args.repeat):
        print(f"repetition {n + 1} of {args.repeat}", file=sys.stderr)
        repetitions.append(
            run_repetition(options, plans, args.seed, args.list_calls, args.max_seconds)
        )
    results.update(summarise(repetitions))
    results["repetitions"] = repetitions
    if not args.skip_starts:
        print("measuring cold and warm starts ...", file=sys.stderr)
        results["starts"] = measure_starts(options, args.starts, args.starts)
    record_end(results, started)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point."""
    args = parse_args(argv)
    results = run_or_exit(lambda: run(args))
    write_results(args.out, results, markdown(results))
    if args.token_economy:
        from bench.economy import run as token_economy

        token_economy.main(["--quick"] if args.quick else [])


if __name__ == "__main__":
    main()
