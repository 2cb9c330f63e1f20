"""Recall latency at scale: p50/p95/p99 over MCP with 1 and 8 clients.

``python -m bench.latency.run [--tiers 1k,10k,100k,1m] [--queries N] [--clients 1,8]
[--workers N]``

Tiers: 1k, 10k and 100k memories in ONE agent (loaded one after another into the same
database, each into its own agent, so the table holds 1.1k, 11.1k, 111.1k rows when the tier
is measured), and 1M memories spread over 1,000 agents in 100 tenants (a fresh database).
The corpus is bulk-loaded with :mod:`bench.latency.loader` (synthetic text, clustered unit
vectors, ``embedding_model`` = the local model so nothing is re-embedded); the service runs
with ``CPERSONA_EMBEDDING_MODE=local`` so every query is embedded by the real model, exactly
as in production. Before it serves, each version's database is settled
(``bench.harness.serving.settle``: its own ``reembed`` finishes the passage backfill, then
``VACUUM (ANALYZE)``), so no backfill runs beside the measured calls. Queries go through the
official MCP client to a real ``serve`` process. After each load the EXPLAIN plans of the
recall statements are recorded (``recall_lexical`` and ``recall_vectors_384``; one
``recall_candidates_384`` for a snapshot from before the split): the plans Postgres actually
chooses for the prepared statements, after the custom/generic plan decision.

The parts: :mod:`bench.latency.scenarios` (loading and inspecting each tier),
:mod:`bench.latency.probe` (measuring recall with concurrent clients),
:mod:`bench.latency.queries` (the query texts), :mod:`bench.latency.report` (Markdown);
the corpus is :mod:`bench.latency.loader`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA
from bench.harness.cli import write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.snapshot import code_fingerprint, run_with_own_runtime, snapshot_code
from bench.latency.report import markdown
from bench.latency.scenarios import TIERS, run_single_agent, run_spread
from bench.latency.synthetic import SEED

DEFAULT_OUT = Path("bench/results/recall_latency.json")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every scenario the tiers ask for; the JSON-ready results."""
    started = time.perf_counter()
    args.compare_code = args.compare_code_id = None
    if args.compare is not None:  # beside this run's snapshot, in its runtime directory
        args.compare_code = snapshot_code(args.code.parent, args.compare, "compare")
        args.compare_code_id = code_fingerprint(args.compare_code)
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {k: str(v) for k, v in vars(args).items() if k not in ("out", "code")},
        "code": args.code_id,
        "compare_code": args.compare_code_id,
        "scenarios": [],
    }
    results["options"]["tiers"] = list(args.tiers)
    if any(t in TIERS for t in args.tiers):
        results["scenarios"] += run_single_agent(args)
    if "1m" in args.tiers:
        results["scenarios"].append(run_spread(args))
    record_end(results, started)
    return results


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.run", description=__doc__)
    add = parser.add_argument
    add("--tiers", default="1k,10k,100k,1m", help="scenarios (default: %(default)s)")
    add("--queries", type=int, default=400, help="measured recalls per run (default: %(default)s)")
    add("--warmup", type=int, default=40, help="unmeasured recalls per run (default: %(default)s)")
    add("--clients", default="1,8", help="client counts (default: %(default)s)")
    add("--spread-rows", type=int, default=1_000_000, help="rows of the spread scenario")
    add("--tenants", type=int, default=100, help="tenants of the spread scenario")
    add("--agents-per-tenant", type=int, default=10, help="agents per tenant (spread)")
    add("--key-tenants", type=int, default=10, help="tenants queried in the spread scenario")
    add("--max-seconds", type=float, default=900.0, help="time limit per run")
    add("--workers", type=int, default=1, help="serve --workers (default: %(default)s)")
    add("--seed", type=int, default=SEED, help="corpus and query seed")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    add("--keep-data", action="store_true", help="keep the temporary data directories")
    add(
        "--corpus",
        choices=("locomo", "synthetic"),
        default="locomo",
        help="LoCoMo-derived texts and real vectors, or template sentences (default: %(default)s)",
    )
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (default: %(default)s)")
    add(
        "--query-set",
        choices=("questions", "common-words"),
        default="questions",
        help="the corpus's questions, or three of its most widespread words per query"
        " (the lexical worst case; default: %(default)s)",
    )
    add(
        "--compare",
        type=Path,
        help="also measure the service of this checkout (e.g. main), in turn",
    )
    add(
        "--long-share",
        type=float,
        default=0.0,
        help="share of each single-agent tier's rows given passages (issue 34; default: none)",
    )
    add(
        "--passages-off",
        action="store_true",
        help="also measure this code with CPERSONA_PASSAGES=false, in turn (as 'compare')",
    )
    args = parser.parse_args(argv)
    args.tiers = [t.strip().lower() for t in args.tiers.split(",") if t.strip()]
    if any(t not in (*TIERS, "1m") for t in args.tiers):
        parser.error("--tiers takes 1k, 3k, 10k, 100k and/or 1m")
    args.clients = [int(c) for c in args.clients.split(",") if c.strip()]
    if any(not 1 <= c <= 64 for c in args.clients) or not args.clients:
        parser.error("--clients takes numbers between 1 and 64")
    if args.queries < 1 or args.warmup < 0 or args.key_tenants < 1:
        parser.error("--queries must be positive, --warmup not negative")
    if not 0 <= args.long_share <= 1 or (args.passages_off and args.compare is not None):
        parser.error("--long-share takes 0..1; --passages-off and --compare exclude each other")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    results = run_with_own_runtime(args, run)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
