"""Run the benchmark suite: ``.venv/bin/python -m bench.run [--quick] [--out PATH]``.

Starts the real service (embedded Postgres in a fresh temporary directory, or
``--database-url``), measures store throughput/latency with 1 and 8 MCP
clients for short and medium texts, list_memories latency, and cold/warm
start; prints Markdown tables and writes JSON (plus the tables next to it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import harness
from bench.cli import env_pair, run_or_exit, write_results
from bench.machine import machine_facts, record_end
from bench.markdown import machine_line, outcomes, table
from bench.store_throughput import StorePlan, measure_starts, run_repetition
from bench.texts import SIZES

# --------------------------------------------------------------------------- summaries


def _median_run(phases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The repetition of a phase with the median throughput (upper median)."""
    ordered = sorted(phases, key=lambda p: float(p["latency"]["throughput_per_s"]))
    return ordered[len(ordered) // 2]


def summarise_phase(phases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One phase over repetitions: median of every latency field, throughput range,
    summed outcomes, and the CPU split of the median-throughput repetition."""
    summary = dict(_median_run(phases))
    fields = phases[0]["latency"].keys()
    summary["latency"] = {f: statistics.median(p["latency"][f] for p in phases) for f in fields}
    rates = [p["latency"]["throughput_per_s"] for p in phases]
    summary["throughput_range_per_s"] = [min(rates), max(rates)]
    summary["repetitions"] = len(phases)
    outcomes: dict[str, int] = {}
    for phase in phases:
        for name, count in phase["outcomes"].items():
            outcomes[name] = outcomes.get(name, 0) + count
    summary["outcomes"] = outcomes
    return summary


def summarise(repetitions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per kind (store, list_memories), each phase summarised over the repetitions."""
    return {
        kind: [
            summarise_phase(list(phases))
            for phases in zip(*(r[kind] for r in repetitions), strict=True)
        ]
        for kind in ("store", "list_memories")
    }


# --------------------------------------------------------------------------- Markdown


def _cores(cpu: dict[str, Any], name: str) -> str:
    """Average cores busy for ``name`` in a phase."""
    entry = cpu.get(name)
    return "n/a" if entry is None else f"{entry['cores']:.2f}"


def _per_call(cpu: dict[str, Any], name: str) -> str:
    """CPU milliseconds per call for ``name`` in a phase."""
    entry = cpu.get(name)
    return "n/a" if entry is None else f"{entry['ms_per_call']:.2f}"


def _rate(phase: dict[str, Any]) -> str:
    """Median throughput, with the range when there were several repetitions."""
    text = f"{phase['latency']['throughput_per_s']:.1f}"
    if phase.get("repetitions", 1) > 1:
        low, high = phase["throughput_range_per_s"]
        text += f" ({low:.0f} to {high:.0f})"
    return text


def _calls(phase: dict[str, Any]) -> str:
    """Calls per repetition, times the repetitions."""
    count = f"{phase['latency']['count']:.0f}"
    reps = phase.get("repetitions", 1)
    return count if reps == 1 else f"{count} x {reps}"


def _ms(latency: dict[str, Any], *names: str) -> list[str]:
    """Latency fields in milliseconds, one decimal."""
    return [f"{latency[name]:.1f}" for name in names]


def store_table(stores: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows for the store configurations."""
    columns = [
        *("Text", "Clients", "Calls", "Stores/s", "Mean ms", "p50 ms", "p95 ms", "p99 ms"),
        *("Max ms", "Outcomes"),
    ]
    rows = [
        [
            f"{r['size']} (~{r['mean_content_chars']} chars)",
            r["clients"],
            _calls(r),
            _rate(r),
            *_ms(r["latency"], "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"),
            outcomes(r["outcomes"]),
        ]
        for r in stores
    ]
    return table(columns, "l" + "r" * 8 + "l", rows)


def cpu_table(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows: where the CPU went, in cores busy and milliseconds per call."""
    columns = [
        *("Phase", "Server cores", "Postgres cores", "Bench client cores", "Other cores"),
        *("Steal cores", "Server ms/call", "Postgres ms/call", "Client ms/call"),
    ]
    rows = [
        [
            r["name"],
            *(_cores(r["cpu"], n) for n in ("server", "postgres", "client", "other", "steal")),
            *(_per_call(r["cpu"], n) for n in ("server", "postgres", "client")),
        ]
        for r in entries
    ]
    return table(columns, "l" + "r" * 8, rows)


def list_table(lists: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows for list_memories."""
    columns = [
        *("list_memories", "Calls", "Calls/s", "Mean ms", "p50 ms", "p95 ms", "p99 ms"),
        "Response KB",
    ]
    rows = [
        [
            r["name"],
            _calls(r),
            _rate(r),
            *_ms(r["latency"], "mean_ms", "p50_ms", "p95_ms", "p99_ms"),
            f"{r['mean_response_bytes'] / 1024:.1f}",
        ]
        for r in lists
    ]
    return table(columns, "l" + "r" * 7, rows)


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def start_table(starts: dict[str, Any]) -> list[str]:
    """Markdown rows for cold and warm starts (median, min, max over the runs)."""
    columns = [
        *("Start", "Runs", "Spawn → /readyz 200 (median)", "min", "max"),
        *("Spawn → `serving` log (median)", "SIGTERM → exit (median)"),
    ]
    rows = []
    for kind in ("cold", "warm"):
        runs = [r for r in starts["runs"] if r["kind"] == kind]
        if not runs:
            continue
        ready = [r["ready_s"] for r in runs]
        serving = [r["serving_log_s"] for r in runs if r["serving_log_s"] is not None]
        rows.append(
            [
                kind,
                len(runs),
                *map(_seconds, (statistics.median(ready), min(ready), max(ready))),
                _seconds(statistics.median(serving)) if serving else "n/a",
                _seconds(statistics.median(r["stop_s"] for r in runs)),
            ]
        )
    cli = f"\n`python -m service --help` (interpreter + imports): {starts['cli_help_s']} s"
    return [*table(columns, "l" + "r" * 6, rows), cli]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m = results["machine"]
    lines = [
        f"{machine_line(m, python=True)}, {m['busy_cores_before_start']} cores busy before start",
        "",
        f"Latency figures are medians over {results['options']['repeat']} pass(es); the CPU"
        " split is that of the median-throughput pass.",
        "",
        *store_table(results["store"]),
        "",
        *list_table(results["list_memories"]),
        "",
        *cpu_table([*results["store"], *results["list_memories"]]),
    ]
    if "starts" in results:
        lines += ["", *start_table(results["starts"])]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI

DEFAULT_OUT = Path("bench/results/latest.json")
FULL = {"calls": 2000, "warmup": 100, "list_calls": 200, "starts": 3, "max_seconds": 300.0}
BUSY_WARNING_CORES = 0.25
MAX_REPEAT = 10
QUICK = {"calls": 200, "warmup": 20, "list_calls": 50, "starts": 1, "max_seconds": 60.0}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; unset sizes take the --quick or full defaults."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    add = parser.add_argument
    add("--quick", action="store_true", help="small smoke run (200 calls per configuration)")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON result file (default: %(default)s)")
    add("--calls", type=int, help="measured store calls per configuration (default 2000)")
    add("--warmup", type=int, help="unmeasured store calls per configuration (default 100)")
    add("--list-calls", type=int, help="measured list_memories calls per variant (default 200)")
    add("--clients", default="1,8", help="client counts, comma-separated (default: %(default)s)")
    add("--sizes", default="short,medium", help="text sizes (default: %(default)s)")
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
    add("--token-economy", action="store_true", help="then run bench.token_economy too")
    args = parser.parse_args(argv)
    if not 1 <= args.repeat <= MAX_REPEAT:
        parser.error(f"--repeat takes 1 to {MAX_REPEAT}")
    defaults = QUICK if args.quick else FULL
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def build_plans(args: argparse.Namespace) -> list[StorePlan]:
    """One plan per (size, client count)."""
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    if any(s not in SIZES for s in sizes):
        raise SystemExit("--sizes takes short and/or medium")
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    if any(c < 1 or c > 64 for c in clients):
        raise SystemExit("--clients takes numbers between 1 and 64")
    return [
        StorePlan(n, SIZES[size], args.calls, args.warmup, args.max_seconds)
        for size in sizes
        for n in clients
    ]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run everything; return the JSON-ready results."""
    options = harness.ServiceOptions(args.database_url, dict(args.env), args.keep_data)
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
        from bench import token_economy

        token_economy.main(["--quick"] if args.quick else [])


if __name__ == "__main__":
    main()
