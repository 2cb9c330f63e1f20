"""Store throughput and latency, list_memories latency, cold and warm start.

With embeddings on, each store configuration also reports its backlog: the seconds
from the first measured store until ``get_queue_status`` says nothing is pending (the
last row embedded), and the rows embedded per second over that time.

All calls go through official MCP SDK client sessions over HTTP to a real
``serve`` process (see :mod:`bench.harness.serving`). Each configuration stores a fixed
number of distinct, pre-generated texts after an unmeasured warm-up, bounded by
a time limit; workers share one queue of texts so the total is exact.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import datetime as dt
import json
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession

from bench.corpora.texts import Size, TextSource, mean_length
from bench.corpora.words import NAMES
from bench.harness import serving as harness
from bench.harness.client import json_body, mcp_session, mcp_sessions, result_text, wait_queue_empty
from bench.harness.cpu import cpu_snapshot, cpu_usage
from bench.harness.stats import latency_stats
from bench.throughput import db_waits

CALL_TIMEOUT_S = 30.0
GRACE_S = 2 * CALL_TIMEOUT_S
LIST_LIMIT = 100
DRAIN_POLL_S = 0.05
"""How often ``get_queue_status`` is polled for the time until the last row is embedded."""
USERS = NAMES[:6]


@dataclasses.dataclass(frozen=True)
class StorePlan:
    """One store configuration: concurrency, text size and how much to do."""

    clients: int
    size: Size
    calls: int
    warmup: int
    max_seconds: float
    db_waits: bool = False  # sample the backends' waits (bench.throughput.db_waits) while measuring

    @property
    def name(self) -> str:
        return f"store/{self.size}/{self.clients}c"


@dataclasses.dataclass
class Tally:
    """Latencies and outcomes of a batch of tool calls."""

    latencies_s: list[float] = dataclasses.field(default_factory=list)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    response_bytes: int = 0
    timed_out: bool = False


# --------------------------------------------------------------------------- one call


def outcome_of(result: types.CallToolResult) -> tuple[str, int]:
    """The spec outcome of a tool result and its size in characters.

    Outcomes are the spec's ``result`` ("stored", "skipped", "rejected"), "ok" for
    tools without one, or "error"; a store the service says it embedded is
    "stored+embedded", so the tables show whether embeddings were on.
    """
    text = result_text(result)
    if result.is_error or text is None:
        return "error", 0
    body, ok = json_body(text)
    if not ok or "error" in body:
        return "error", len(text)
    outcome = str(body.get("result", "ok"))
    if body.get("embedded") is True:
        outcome += "+embedded"
    return outcome, len(text)


async def timed_call(session: ClientSession, tool: str, args: dict[str, Any], tally: Tally) -> None:
    """Call ``tool`` once, adding its latency and outcome to ``tally``."""
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
    except Exception as exc:  # a failed call is a result to report, not a crash
        tally.latencies_s.append(time.perf_counter() - started)
        tally.outcomes[f"exception:{type(exc).__name__}"] += 1
        return
    tally.latencies_s.append(time.perf_counter() - started)
    outcome, size = outcome_of(result)
    tally.outcomes[outcome] += 1
    tally.response_bytes += size


def store_args(phase: str, index: int, text: str, agent: str) -> dict[str, Any]:
    """Arguments of one realistic ``store`` call (content, source, a unique message id)."""
    user = USERS[index % len(USERS)]
    return {
        "agent_id": agent,
        "message": {
            "id": f"{phase}-{index}",
            "content": text,
            "source": {"type": "User", "id": f"user-{user.lower()}", "name": user},
        },
    }


# --------------------------------------------------------------------------- store phases


class Queue:
    """Hands out indexes 0..count-1 once each until the deadline passes."""

    def __init__(self, count: int, deadline: float) -> None:
        self._next = 0
        self._count = count
        self.deadline = deadline
        self.expired = False

    def take(self) -> int | None:
        """The next index, or None when all are taken or time is up."""
        if time.perf_counter() >= self.deadline:
            self.expired = self._next < self._count
            return None
        if self._next >= self._count:
            return None
        self._next += 1
        return self._next - 1


async def _store_worker(
    session: ClientSession, agent: str, phase: str, texts: Sequence[str], queue: Queue, tally: Tally
) -> None:
    """Store texts from the shared queue until it is empty or time is up."""
    for _ in range(len(texts)):
        index = queue.take()
        if index is None:
            return
        await timed_call(session, "store", store_args(phase, index, texts[index], agent), tally)


async def store_phase(
    sessions: Sequence[ClientSession],
    agents: Sequence[str],
    phase: str,
    texts: Sequence[str],
    seconds: float,
) -> tuple[Tally, float]:
    """All sessions store ``texts`` concurrently; return the tally and the wall time.

    ``phase`` prefixes the message ids, which must be unique per agent (or the
    service skips the store as a duplicate msg_id).
    """
    tally = Tally()
    queue = Queue(len(texts), time.perf_counter() + seconds)
    started = time.perf_counter()
    workers = [
        _store_worker(session, agent, phase, texts, queue, tally)
        for session, agent in zip(sessions, agents, strict=True)
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*workers), timeout=seconds + GRACE_S)
    except TimeoutError:
        tally.timed_out = True
    tally.timed_out = tally.timed_out or queue.expired
    return tally, time.perf_counter() - started


def _agents(plan: StorePlan) -> list[str]:
    """One agent per client: ``bench-<size>-<clients>c-<n>``."""
    return [f"bench-{plan.size}-{plan.clients}c-{n}" for n in range(plan.clients)]


def list_agent(plans: Sequence[StorePlan]) -> str:
    """An agent that has many memories: a single-client medium run's, else the first plan's."""
    chosen = next((p for p in plans if p.clients == 1 and p.size == "medium"), plans[0])
    return _agents(chosen)[0]


def _tally_result(tally: Tally, wall_s: float) -> dict[str, Any]:
    """The JSON form of a measured tally."""
    count = max(1, len(tally.latencies_s))
    return {
        "latency": dataclasses.asdict(latency_stats(tally.latencies_s, wall_s)),
        "outcomes": dict(tally.outcomes),
        "mean_response_bytes": round(tally.response_bytes / count),
        "hit_time_limit": tally.timed_out,
    }


@contextlib.asynccontextmanager
async def _database_waits(
    service: harness.Service, wanted: bool
) -> AsyncIterator[db_waits.Waits | None]:
    """What the embedded Postgres's backends wait for during the block (the measured
    stores and the drain of their backlog), when ``wanted`` (None with ``--database-url``:
    a shared server's other clients would be counted too)."""
    if not wanted or service.pgdata is None:
        yield None
        return
    url = db_waits.embedded_url(service.pgdata)
    await db_waits.time_wal_flushes(url)
    async with db_waits.sampled(url) as waits:
        yield waits


async def run_store_plan(
    service: harness.Service, plan: StorePlan, source: TextSource
) -> dict[str, Any]:
    """Warm up, then measure ``plan.calls`` stores with ``plan.clients`` sessions."""
    agents = _agents(plan)
    warm = source.batch(plan.size, plan.warmup)
    texts = source.batch(plan.size, plan.calls)
    async with mcp_sessions(service.mcp_url, service.key, plan.clients) as sessions:
        await store_phase(sessions, agents, "warmup", warm, plan.max_seconds)
        await wait_queue_empty(sessions[0], plan.max_seconds, DRAIN_POLL_S)
        # the backlog is timed inside the sampled block: its exit waits for Postgres's
        # statistics to settle, and the drain must not be timed after that wait
        async with _database_waits(service, plan.db_waits) as waits:
            before = cpu_snapshot(service)
            tally, wall = await store_phase(sessions, agents, "run", texts, plan.max_seconds)
            after = cpu_snapshot(service)
            drained = wall + await wait_queue_empty(sessions[0], plan.max_seconds, DRAIN_POLL_S)
    stored = sum(n for outcome, n in tally.outcomes.items() if outcome.startswith("stored"))
    return {
        "name": plan.name,
        "clients": plan.clients,
        "size": plan.size,
        "planned_calls": plan.calls,
        "warmup_calls": plan.warmup,
        "mean_content_chars": round(mean_length(texts)),
        **_tally_result(tally, wall),
        "cpu": cpu_usage(before, after, len(tally.latencies_s)),
        "db_waits": None if waits is None else waits.result(),
        "backlog": {
            "stored": stored,
            "drained_s": round(drained, 3),
            "after_last_ack_s": round(drained - wall, 3),
            "embedded_per_s": round(stored / drained, 1) if drained > 0 else None,
        },
    }


# --------------------------------------------------------------------------- list_memories


async def _list_loop(
    session: ClientSession, args: dict[str, Any], calls: int, deadline: float, tally: Tally
) -> None:
    """Call ``list_memories`` up to ``calls`` times before ``deadline``."""
    for _ in range(calls):
        if time.perf_counter() >= deadline:
            tally.timed_out = True
            return
        await timed_call(session, "list_memories", args, tally)


async def run_list(
    service: harness.Service, agent: str, calls: int, warmup: int, max_seconds: float
) -> list[dict[str, Any]]:
    """``list_memories`` latency (limit 100) for one agent and for the whole tenant."""
    variants = {"one agent": agent, "all agents": ""}
    results = []
    async with mcp_session(service.mcp_url, service.key) as session:
        for label, agent_id in variants.items():
            args = {"agent_id": agent_id, "limit": LIST_LIMIT}
            await _list_loop(session, args, warmup, time.perf_counter() + max_seconds, Tally())
            tally = Tally()
            before = cpu_snapshot(service)
            await _list_loop(session, args, calls, time.perf_counter() + max_seconds, tally)
            after = cpu_snapshot(service)
            wall = after.wall - before.wall
            results.append(
                {
                    "name": f"list_memories/{label}/limit {LIST_LIMIT}",
                    "agent_id": agent_id,
                    "planned_calls": calls,
                    "warmup_calls": warmup,
                    **_tally_result(tally, wall),
                    "cpu": cpu_usage(before, after, len(tally.latencies_s)),
                }
            )
    return results


# --------------------------------------------------------------------------- one pass


async def service_benchmarks(
    service: harness.Service,
    plans: Sequence[StorePlan],
    seed: int,
    list_calls: int,
    max_seconds: float,
) -> dict[str, Any]:
    """Every measurement that needs the running service: the store plans, then listing."""
    source = TextSource(seed)
    stores = []
    for plan in plans:
        print(f"  {plan.name}: {plan.warmup} warm-up + {plan.calls} calls ...", file=sys.stderr)
        stores.append(await run_store_plan(service, plan, source))
    print("  list_memories ...", file=sys.stderr)
    lists = await run_list(
        service, list_agent(plans), list_calls, max(5, list_calls // 10), max_seconds
    )
    return {"store": stores, "list_memories": lists}


def run_repetition(
    options: harness.ServiceOptions,
    plans: Sequence[StorePlan],
    seed: int,
    list_calls: int,
    max_seconds: float,
) -> dict[str, Any]:
    """One full pass on a fresh service (new data directory or new tenant)."""
    print("starting the service ...", file=sys.stderr)
    with harness.running_service(options) as service:
        print(f"  ready in {service.start_seconds:.2f} s at {service.base_url}", file=sys.stderr)
        benchmarks = service_benchmarks(service, plans, seed, list_calls, max_seconds)
        results = asyncio.run(benchmarks)
    results["service_ready_s"] = round(service.start_seconds, 3)
    return results


# --------------------------------------------------------------------------- start times


def _serving_logged_at(log_path: Path) -> float | None:
    """Epoch time of the service's ``serving`` log line (after Postgres and migrations)."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if '"serving"' not in line:
            continue
        try:
            stamp = json.loads(line)["timestamp"]
            return dt.datetime.fromisoformat(stamp).timestamp()
        except (ValueError, KeyError, TypeError):
            return None
    return None


def time_one_start(data_dir: Path, options: harness.ServiceOptions, kind: str) -> dict[str, Any]:
    """Spawn ``serve`` on ``data_dir``, time it to ``/readyz`` 200, then stop it."""
    env = harness.service_env(data_dir, options)
    port = harness.free_port()
    log_path = data_dir / f"start-{kind}-{time.time_ns()}.log"
    spawned_epoch = time.time()
    process = harness.spawn_serve(env, port, log_path)
    try:
        ready = harness.wait_ready(
            f"http://{harness.LOOPBACK}:{port}", process, log_path, harness.READY_TIMEOUT_S
        )
    finally:
        stop = harness.stop_serve(process, data_dir / "pgdata")
    serving = _serving_logged_at(log_path)
    return {
        "kind": kind,
        "ready_s": round(ready, 3),
        "serving_log_s": None if serving is None else round(serving - spawned_epoch, 3),
        "stop_s": round(stop, 3),
    }


def cli_floor_seconds() -> float:
    """Seconds for ``python -m service --help``: interpreter plus imports, no database."""
    started = time.perf_counter()
    harness.run_cli(["--help"], harness.service_env(Path("/nonexistent"), harness.ServiceOptions()))
    return round(time.perf_counter() - started, 3)


def measure_starts(options: harness.ServiceOptions, cold: int, warm: int) -> dict[str, Any]:
    """Cold starts (empty data dir each) and warm starts (restart on the last one).

    With an external database there is no cold start to measure; every start is
    a restart against the already-migrated database, which must hold a key
    (run the store benchmark first).
    """
    runs: list[dict[str, Any]] = []
    with harness.scratch_dir() as scratch:
        last = scratch / "warm"
        last.mkdir()
        for n in range(max(1, cold) if options.embedded else 0):
            last = scratch / f"cold-{n}"
            last.mkdir()
            run = time_one_start(last, options, "cold")
            if n < cold:
                runs.append(run)
        runs.extend(time_one_start(last, options, "warm") for _ in range(warm))
    return {"cli_help_s": cli_floor_seconds(), "runs": runs}
