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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench.harness import serving as harness
from bench.harness.client import call_json, mcp_session, queue_pending
from bench.harness.cpu import CpuSnapshot, cpu_snapshot, cpu_usage
from bench.harness.stats import latency_stats
from bench.latency.plans import index_scans

LOCAL = {"CPERSONA_EMBEDDING_MODE": "local"}


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a query goes: the tenant's key and one of its agents."""

    key: str
    agent: str


Request = Callable[[Target, str], tuple[str, dict[str, Any]]]
"""A job's tool call: the tool and its arguments for a target and a text."""


def recall_request(target: Target, text: str) -> tuple[str, dict[str, Any]]:
    """``recall`` of ``text`` (limit 10): the call every latency run measures by default."""
    return "recall", {"agent_id": target.agent, "query": text, "limit": 10}


def store_request(target: Target, text: str) -> tuple[str, dict[str, Any]]:
    """``store`` of ``text`` as a new memory of the target's agent."""
    return "store", {"agent_id": target.agent, "message": {"content": text}}


@dataclasses.dataclass
class _Run:
    """Shared state of one measurement: the job queues, the results, the start mark."""

    service: harness.Service
    warm: collections.deque[tuple[Target, str]]
    measured: collections.deque[tuple[Target, str]]
    barrier: asyncio.Barrier
    request: Request = recall_request
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
        tool, args = run.request(target, text)
        reply = await call_json(sessions[target.key], tool, args)
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
    request: Request = recall_request,
) -> dict[str, Any]:
    """Latency of ``recall`` (limit 10; another call with ``request``) with ``clients``
    concurrent clients.

    Each text is used once (unique queries: every one is embedded); targets are
    drawn round-robin. The first ``warmup`` calls are not measured.
    """
    jobs = [(targets[i % len(targets)], text) for i, text in enumerate(texts)]
    run = _Run(
        service,
        collections.deque(jobs[:warmup]),
        collections.deque(jobs[warmup:]),
        asyncio.Barrier(clients),
        request,
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
        "samples_s": run.latencies,
        "wall_s": after.wall - before.wall,
    }


@dataclasses.dataclass(frozen=True)
class Tree:
    """One version of the service under measurement: its code, database and targets."""

    name: str
    code: Path
    code_id: str
    data_dir: Path
    url: str
    targets: Sequence[Target]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Settings of this version's service beside the shared ones (CPERSONA_PASSAGES)."""


ROUNDS = 2
"""Measurements per client count and version, alternating versions (the machine is shared,
so two versions measured in turn see the same load)."""


def _merged(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one version and client count as one run (latencies pooled)."""
    samples = [x for part in parts for x in part.pop("samples_s")]
    wall = sum(part.pop("wall_s") for part in parts)
    run = dict(parts[-1])
    run["latency"] = dataclasses.asdict(latency_stats(samples, wall))
    run["failures"] = dict(
        sum((collections.Counter(p["failures"]) for p in parts), start=collections.Counter())
    )
    run["rounds"] = len(parts)
    return run


def _measured(
    tree: Tree,
    service: harness.Service,
    chunk: Sequence[str],
    clients: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    before = asyncio.run(index_scans(tree.url))
    run = asyncio.run(measure(service, tree.targets, chunk, clients, args.warmup, args.max_seconds))
    after = asyncio.run(index_scans(tree.url))
    run["index_scans"] = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
    return run


def latency_runs(
    trees: Sequence[Tree], args: argparse.Namespace, texts: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Serve each version on its loaded data (local embeddings), once its backfill is
    settled (``harness.settle``), and measure each client count, ``ROUNDS`` times per
    version in turn; the runs per version."""
    per_round = args.queries // ROUNDS + args.warmup
    env = {**LOCAL, "CPERSONA_WORKERS": str(args.workers)}  # ignored by code without it
    for t in trees:  # measured in the steady state: no backfill beside the recalls
        options = harness.ServiceOptions(extra_env={**env, **t.env})
        harness.settle(harness.service_env(t.data_dir, options), cwd=t.code)
    with contextlib.ExitStack() as stack:
        services = [
            stack.enter_context(
                harness.serve_on(
                    t.code, t.data_dir, t.targets[0].key, {**env, **t.env}, stop_postgres=False
                )
            )
            for t in trees
        ]
        pending = [asyncio.run(queue_pending(service)) for service in services]
        runs: dict[str, list[dict[str, Any]]] = {t.name: [] for t in trees}
        for n, clients in enumerate(args.clients):
            print(
                f"    {clients} client(s): {args.queries} recalls per version ...", file=sys.stderr
            )
            parts: dict[str, list[dict[str, Any]]] = {t.name: [] for t in trees}
            for r in range(ROUNDS):
                start = (n * ROUNDS + r) * per_round
                chunk = list(texts[start : start + per_round])
                for tree, service in zip(trees, services, strict=True):
                    parts[tree.name].append(_measured(tree, service, chunk, clients, args))
            for tree, waiting in zip(trees, pending, strict=True):
                run = _merged(parts[tree.name])
                run.update(queue_pending_at_start=waiting, code=tree.code_id, version=tree.name)
                runs[tree.name].append(run)
    return runs


def queries_needed(args: argparse.Namespace) -> int:
    """Query texts a tier uses: every round of every client count has its own."""
    per_round = int(args.queries) // ROUNDS + int(args.warmup)
    return per_round * ROUNDS * len(args.clients)
