"""The service and CPersona 2.6.14 back to back, with the same client harness.

``python -m bench.latency.versus [--sizes 1k,10k] [--queries N] [--stores N]``

For each size, each system holds an agent of that many memories with the same texts
(LoCoMo turns, then the turns with a copy number: :func:`bench.latency.corpus.row_text`):
the service's are bulk-loaded with the local model's vectors (:mod:`bench.latency.scenarios`),
CPersona's are stored through its own ``store`` tool (8 clients) and embedded by it through
:mod:`bench.harness.embed_server` (the same model). Then, with the latency harness
(:func:`bench.latency.probe.measure`, the official MCP client over HTTP): ``recall`` p50/p95
with 1 client, recalls per second with 8 clients, stores per second with 8 clients. The
service runs first, CPersona right after it, on the same machine at the same load. Each
system is measured at rest: CPersona once its stores have answered (it embeds on the
write path), the service on a settled database (``bench.harness.serving.settle``: its
``reembed`` runs the passage backfill of the loaded rows, then ``VACUUM (ANALYZE)``) and
once its embedding queue is empty (``queue_drain_seconds``, about 0 after the settle).
CPersona is set up by :mod:`bench.harness.cpersona`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA
from bench.harness import cpersona, serving as harness
from bench.harness.cli import run_or_exit, write_results
from bench.harness.client import drain_timeout_s, mcp_session, wait_queue_empty
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.latency import corpus as latency_corpus, loader as corpus
from bench.latency.probe import LOCAL, Request, Target, measure, recall_request, store_request
from bench.latency.scenarios import TIERS, _load, _query_texts, embedded_postgres
from bench.latency.synthetic import SEED

DEFAULT_OUT = Path("bench/results/versus_cpersona.json")
LOAD_CLIENTS = 8


def corpus_texts(rows: int, data: Path) -> list[str]:
    """The texts of an agent of ``rows`` memories, as the bulk loader writes them."""
    base = latency_corpus.turns(data)
    return [latency_corpus.row_text(i, base) for i in range(rows)]


def new_texts(count: int, label: str) -> list[str]:
    """Texts to store during a measurement, each new (none is skipped as a duplicate)."""
    return [
        f"Versus note {label}-{i}: the parcel for order {i} arrives on day {i % 28 + 1}."
        for i in range(count)
    ]


def _measure(
    service: harness.Service,
    target: Target,
    texts: Sequence[str],
    clients: int,
    args: argparse.Namespace,
    request: Request,
) -> dict[str, Any]:
    run = asyncio.run(
        measure(service, [target], texts, clients, args.warmup, args.max_seconds, request)
    )
    run.pop("samples_s")
    return run


def measure_system(
    service: harness.Service, target: Target, args: argparse.Namespace, label: str
) -> dict[str, Any]:
    """Recall at 1 and 8 clients, store at 8 clients (texts new to this system and size)."""
    per_run = args.queries + args.warmup
    queries = _query_texts(args, 2 * per_run, args.seed + len(label))
    stores = new_texts(args.stores + args.warmup, label)
    print(f"  {label}: recall x1, recall x8, store x8 ...", file=sys.stderr)
    return {
        "recall_1": _measure(service, target, queries[:per_run], 1, args, recall_request),
        "recall_8": _measure(service, target, queries[per_run:], 8, args, recall_request),
        "store_8": _measure(service, target, stores, 8, args, store_request),
    }


def service_side(
    args: argparse.Namespace, home: tuple[Path, str, str], tier: str
) -> dict[str, Any]:
    data_dir, key, url = home
    agent = f"agent-{tier}"
    print(f"{tier} service: loading {TIERS[tier]} rows ...", file=sys.stderr)
    _load(args, url, [corpus.AgentLoad("scale", agent, TIERS[tier])])
    env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL))
    harness.settle(env)
    with harness.serving(
        env, data_dir, key, log_name=f"serve-{tier}.log", stop_postgres=False
    ) as service:
        drained = asyncio.run(_drained(service, TIERS[tier]))
        print(f"  service {tier}: queue empty after {drained:.1f} s", file=sys.stderr)
        measured = measure_system(service, Target(key, agent), args, f"service {tier}")
        return {**measured, "queue_drain_seconds": round(drained, 1)}


async def _drained(service: harness.Service, rows: int) -> float:
    """Seconds until the service's embedding queue is empty (its start-up work on the
    loaded rows done)."""
    async with mcp_session(service.mcp_url, service.key) as session:
        return await wait_queue_empty(session, drain_timeout_s(rows, 600.0))


def cpersona_side(
    args: argparse.Namespace, script: Path, embed_url: str, data_dir: Path, tier: str
) -> dict[str, Any]:
    agent = f"agent-{tier}"
    with cpersona.serving(script, data_dir, embed_url) as service:
        target = Target(service.key, agent)
        print(
            f"{tier} CPersona: storing {TIERS[tier]} rows ({LOAD_CLIENTS} clients) ...",
            file=sys.stderr,
        )
        texts = corpus_texts(TIERS[tier], args.data)
        started = time.perf_counter()
        load = asyncio.run(
            measure(service, [target], texts, LOAD_CLIENTS, 0, args.load_seconds, store_request)
        )
        loaded = {"seconds": round(time.perf_counter() - started, 1), "failures": load["failures"]}
        return {**measure_system(service, target, args, f"CPersona {tier}"), "load": loaded}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    script = cpersona.ensure_venv(args.venv)
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {k: str(v) for k, v in vars(args).items() if k != "out"},
        "sizes": [],
    }
    with contextlib.ExitStack() as stack:
        data_dir, key = stack.enter_context(harness.fresh_tenant(harness.REPO_ROOT, "scale", LOCAL))
        url = stack.enter_context(embedded_postgres(data_dir))
        embed_url = stack.enter_context(cpersona.embedder())
        cp_dir = stack.enter_context(harness.scratch_dir())
        for tier in args.sizes:
            mine = service_side(args, (data_dir, key, url), tier)
            theirs = cpersona_side(args, script, embed_url, cp_dir, tier)
            results["sizes"].append({"tier": tier, "service": mine, "cpersona": theirs})
    record_end(results, started)
    return results


def versus_rows(results: dict[str, Any]) -> list[list[object]]:
    """One row per size and system: recall p50/p95 (1 client), recalls/s and stores/s (8)."""
    rows: list[list[object]] = []
    for size in results["sizes"]:
        for name, label in (("service", "service"), ("cpersona", f"CPersona {cpersona.VERSION}")):
            s = size[name]
            one, eight, store = (s[k]["latency"] for k in ("recall_1", "recall_8", "store_8"))
            failures = sum(
                sum(s[k]["failures"].values()) for k in ("recall_1", "recall_8", "store_8")
            )
            rows.append(
                [
                    size["tier"],
                    label,
                    f"{one['p50_ms']:.1f}",
                    f"{one['p95_ms']:.1f}",
                    f"{eight['throughput_per_s']:.1f}",
                    f"{store['throughput_per_s']:.1f}",
                    failures,
                ]
            )
    return rows


def markdown(results: dict[str, Any]) -> str:
    columns = [
        *("Memories", "System", "recall p50 ms (1 client)", "recall p95 ms (1 client)"),
        *("recalls/s (8 clients)", "stores/s (8 clients)", "Failures"),
    ]
    return (
        "\n".join(
            [
                f"{machine_line(results['machine'])}.",
                "",
                *table(columns, "ll" + "r" * 5, versus_rows(results)),
            ]
        )
        + "\n"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.versus", description=__doc__)
    add = parser.add_argument
    add("--sizes", default="1k,10k", help="memories in the agent (default: %(default)s)")
    add("--queries", type=int, default=100, help="measured recalls per run (default: %(default)s)")
    add("--stores", type=int, default=100, help="measured stores (default: %(default)s)")
    add("--warmup", type=int, default=10, help="unmeasured calls per run (default: %(default)s)")
    add("--max-seconds", type=float, default=600.0, help="time limit per run")
    add("--load-seconds", type=float, default=3600.0, help="time limit of CPersona's load")
    add("--venv", type=Path, default=cpersona.DEFAULT_VENV, help="CPersona's virtualenv")
    add("--seed", type=int, default=SEED, help="query seed")
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (default: %(default)s)")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    args = parser.parse_args(argv)
    args.corpus, args.query_set = "locomo", "questions"
    args.sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    if not args.sizes or any(s not in TIERS for s in args.sizes):
        parser.error(f"--sizes takes {', '.join(TIERS)}")
    if min(args.queries, args.stores) < 1 or args.warmup < 0:
        parser.error("--queries and --stores must be positive, --warmup not negative")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    results = run_or_exit(lambda: run(args))
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
