"""What the scale-out benchmarks share: one loaded database and ``serve`` processes on it.

:func:`loaded_database` makes a fresh data directory whose embedded Postgres holds tenant
``scale`` with ``--rows`` memories of one agent (bulk-loaded by :mod:`bench.latency.loader`,
embedded with the local model's vectors, so nothing is re-embedded), and keeps that
Postgres running from this process. Every ``serve`` started on it is an *external-database*
process (``DATABASE_URL``), as replicas behind a load balancer are: directly, or through
PgBouncer. :func:`serve_many` runs several of them, :func:`measure_recalls` and
:func:`measure_stores` drive concurrent clients through any MCP endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.corpora.texts import TextSource
from bench.harness import serving as harness
from bench.harness.cli import write_results
from bench.harness.client import mcp_sessions
from bench.harness.cpu import cpu_snapshot, cpu_usage
from bench.harness.machine import machine_facts
from bench.harness.snapshot import run_with_own_runtime
from bench.harness.stats import latency_stats
from bench.latency import loader as corpus
from bench.latency.probe import Target, measure
from bench.latency.scenarios import embedded_postgres
from bench.latency.synthetic import SEED
from bench.throughput.store import store_phase

SLUG = "scale"
AGENT = "corpus"


@dataclasses.dataclass(frozen=True)
class Loaded:
    """The loaded database: its data directory, owner URL, a key and the load report."""

    data_dir: Path
    url: str
    key: str
    load: dict[str, Any]

    @property
    def targets(self) -> list[Target]:
        return [Target(self.key, AGENT)]


@contextlib.contextmanager
def loaded_database(args: argparse.Namespace) -> Iterator[Loaded]:
    """A fresh data directory with ``args.rows`` memories in one agent, Postgres held here."""
    local = {"CPERSONA_EMBEDDING_MODE": "local"}
    with (
        harness.fresh_tenant(args.code, SLUG, local, keep=args.keep_data) as (data_dir, key),
        embedded_postgres(data_dir) as url,
    ):
        print(f"loading {args.rows} memories into one agent ...", file=sys.stderr)
        plan = [corpus.AgentLoad(SLUG, AGENT, args.rows)]
        report = asyncio.run(corpus.load(url, plan, rebuild_indexes=args.rows >= 50_000))
        yield Loaded(data_dir, url, key, dataclasses.asdict(report))


def serve_env(database_url: str, embedding: str, **extra: str) -> dict[str, str]:
    """Settings of one external-database ``serve`` process of the benchmark."""
    return {
        "DATABASE_URL": database_url,
        "CPERSONA_EMBEDDING_MODE": embedding,
        "CPERSONA_LOG_LEVEL": "WARNING",
        **extra,
    }


@contextlib.contextmanager
def serve_many(
    args: argparse.Namespace, loaded: Loaded, count: int, env: Mapping[str, str]
) -> Iterator[list[harness.Service]]:
    """``count`` ``serve`` processes with ``env`` on the loaded database, all ready."""
    with contextlib.ExitStack() as stack:
        services = [
            stack.enter_context(
                harness.serve_on(args.code, loaded.data_dir, loaded.key, env, stop_postgres=False)
            )
            for _ in range(count)
        ]
        yield services


def at(service: harness.Service, base_url: str) -> harness.Service:
    """``service`` reached through another base URL (the load balancer); the CPU counters
    still read that process and the embedded Postgres."""
    return dataclasses.replace(service, base_url=base_url)


def measure_recalls(
    service: harness.Service,
    loaded: Loaded,
    texts: list[str],
    clients: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """``recall`` (limit 10) with ``clients`` concurrent clients; every text used once."""
    return asyncio.run(
        measure(service, loaded.targets, texts, clients, args.warmup, args.max_seconds)
    )


async def _stores(
    service: harness.Service,
    key: str,
    clients: int,
    run: str,
    source: TextSource,
    calls: int,
    warmup: int,
    max_seconds: float,
) -> dict[str, Any]:
    agents = [f"{run}-{n}" for n in range(clients)]
    async with mcp_sessions(service.mcp_url, key, clients) as sessions:
        await store_phase(sessions, agents, "warm", source.batch("short", warmup), max_seconds)
        before = cpu_snapshot(service)
        tally, wall = await store_phase(
            sessions, agents, "run", source.batch("short", calls), max_seconds
        )
        after = cpu_snapshot(service)
    return {
        "clients": clients,
        "latency": dataclasses.asdict(latency_stats(tally.latencies_s, wall)),
        "outcomes": dict(tally.outcomes),
        "hit_time_limit": tally.timed_out,
        "cpu": cpu_usage(before, after, len(tally.latencies_s)),
    }


def measure_stores(
    service: harness.Service, loaded: Loaded, clients: int, run: str, args: argparse.Namespace
) -> dict[str, Any]:
    """``store`` of short texts with ``clients`` sessions, each writing as its own agent."""
    source = TextSource(args.seed + len(run))
    return asyncio.run(
        _stores(
            service, loaded.key, clients, run, source, args.stores, args.warmup, args.max_seconds
        )
    )


def common_options(
    prog: str, description: str | None, default_out: Path
) -> argparse.ArgumentParser:
    """A parser with the options both scale-out benchmarks take (corpus, warm-up,
    embedding modes, limits, output); each adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add = parser.add_argument
    add("--rows", type=int, default=10_000, help="memories loaded first (default: %(default)s)")
    add("--warmup", type=int, default=40, help="unmeasured calls per run (default: %(default)s)")
    add("--embedding", default="local,none", help="embedding modes (default: %(default)s)")
    add("--max-seconds", type=float, default=300.0, help="time limit per measured phase")
    add("--seed", type=int, default=SEED, help="corpus and query seed")
    add("--out", type=Path, default=default_out, help="JSON results (default: %(default)s)")
    add("--keep-data", action="store_true", help="keep the temporary data directory")
    return parser


def numbers(parser: argparse.ArgumentParser, option: str, raw: str, top: int) -> list[int]:
    """A comma-separated list of numbers between 1 and ``top``, or a usage error."""
    values = [int(part) for part in raw.split(",") if part.strip()]
    if not values or any(not 1 <= value <= top for value in values):
        parser.error(f"{option} takes numbers between 1 and {top}")
    return values


def finish_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Parse the shared options' lists (the embedding modes)."""
    args.embedding = [mode.strip() for mode in args.embedding.split(",") if mode.strip()]
    if not args.embedding or any(mode not in ("local", "none") for mode in args.embedding):
        parser.error("--embedding takes local and/or none")


def results_head(args: argparse.Namespace, **parts: Any) -> dict[str, Any]:
    """The start of a results file: machine facts, the options, the code's fingerprint."""
    return {
        "machine": machine_facts(),
        "options": {k: v for k, v in vars(args).items() if k not in ("out", "code")},
        "code": args.code_id,
        **parts,
    }


def main_for(
    parse_args: Callable[[Sequence[str] | None], argparse.Namespace],
    run: Callable[[argparse.Namespace], dict[str, Any]],
    markdown: Callable[[dict[str, Any]], str],
    argv: Sequence[str] | None,
) -> None:
    """A benchmark's entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    results = run_with_own_runtime(args, run)
    write_results(args.out, results, markdown(results))
