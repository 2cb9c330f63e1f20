"""Recall latency against the running service: concurrent clients, one recall per query.

Queries go through the official MCP client to a real ``serve`` process; each text is
used once (so every query is embedded by the service, none answered from a cache).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench import harness
from bench.client import call_json, mcp_session, queue_pending
from bench.cpu import CpuSnapshot, cpu_snapshot, cpu_usage
from bench.latency_queries import query_texts
from bench.scale_inspect import index_scans
from bench.stats import latency_stats

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
    env = {**LOCAL, "CPERSONA_WORKERS": str(args.workers)}
    with harness.serve_on(args.code, data_dir, targets[0].key, env, stop_postgres=False) as service:
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
