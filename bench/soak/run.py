"""Soak: 50 MCP clients on mixed tools for 10 minutes against one real ``serve``.

Run: ``.venv/bin/python -m bench.soak.run [--seconds 600] [--clients 50] [--tenants 5]
[--env NAME=VALUE ...] [--kill-postgres-at SECONDS] [--out bench/results/soak.json]``.

The service is ``python -m service serve`` on loopback with its embedded Postgres and
default settings (a fresh data directory; ``--env`` changes a setting). The clients are
official MCP SDK sessions, spread over ``--tenants`` tenants (one key each), each as
its own agent, calling ``store``, ``recall``, ``get_contents``, ``list_memories`` and
``archive_episode`` back to back (closed loop, no think time; after a refusal a client
waits what ``Retry-After`` asks, at most 1 s) until the time is up.
Every answer is classified (:mod:`bench.soak.calls`): served, a deliberate refusal
(503 overloaded/unavailable, 429 rate or concurrency limit, each with Retry-After),
or a real error. The report gives throughput, p50/p95/p99 per tool, errors by kind,
throughput per minute and the RSS of the ``serve`` process over the run; the target
is zero errors that are not deliberate refusals. ``--kill-postgres-at`` kills the
embedded postmaster once at that second and reports the time to heal.

``--abusive`` adds one more tenant whose key misbehaves the whole run
(:mod:`bench.soak.abuse`: large queries, a flood, bogus keys, stalled exports; ``--abuse``
sets the workers of each); its answers are tallied apart. ``--compare-clean`` runs the
soak twice, back to back, each on a fresh service — without the abuser, then with it —
and reports the well-behaved tenants' p50/p95 of both and their ratios
(:mod:`bench.soak.compare`; target ≤ 2x, 0 real errors, memory flat).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil

from bench.harness import machine, serving as harness
from bench.harness.cli import env_pair, run_or_exit, write_results
from bench.harness.client import mcp_session
from bench.soak import abuse
from bench.soak.calls import ClientState, Outcome, Tally, one_call
from bench.soak.compare import abuser_summary, abuser_table, combine, compare_tables
from bench.soak.report import summary, tables

DEFAULT_OUT = harness.REPO_ROOT / "bench" / "results" / "soak.json"
ABUSIVE_OUT = DEFAULT_OUT.with_name("soak-abuse.json")
DEFAULT_ABUSE = ",".join(f"{name}={n}" for name, n in abuse.DEFAULT_WORKERS.items())
RSS_EVERY_S = 5.0
WARMUP_S = 30.0
GRACE_S = 90.0
RETRY_CAP_S = 1.0


async def _client(mcp_url: str, key: str, number: int, deadline: float, tally: Tally) -> None:
    """One MCP session calling mixed tools until ``deadline``; reconnects if it must."""
    state = ClientState(number)
    while time.monotonic() < deadline:
        try:
            async with mcp_session(mcp_url, key) as session:
                while time.monotonic() < deadline:
                    outcome = await one_call(session, state)
                    tally.add(outcome)
                    if outcome.deliberate:  # as a well-behaved client: honour Retry-After
                        await asyncio.sleep(min(outcome.retry_after, RETRY_CAP_S))
        except Exception as exc:  # a session that broke is an error to report, then reopen
            tally.add(Outcome("session", f"transport {type(exc).__name__}", 0.0, time.monotonic()))
            await asyncio.sleep(1.0)


async def _sample_rss(pid: int, deadline: float, series: list[tuple[float, float]]) -> None:
    process = psutil.Process(pid)
    started = time.monotonic()
    while time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            series.append((time.monotonic() - started, process.memory_info().rss / 2**20))
        await asyncio.sleep(RSS_EVERY_S)


async def _kill_postgres(service: harness.Service, at: float, tally: Tally) -> None:
    await asyncio.sleep(at)
    pid = harness.postmaster_pid(service.pgdata)
    if pid is not None:
        tally.killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)


async def _soak(
    service: harness.Service,
    keys: list[str],
    args: argparse.Namespace,
    abuser: abuse.Abuser | None,
) -> tuple[Tally, Tally]:
    """The well-behaved clients' tally and the abuser's (empty without one)."""
    if abuser is not None and (abuser.workers["large"] or abuser.workers["stall"]):
        await abuse.prepare(abuser, args.abuse_corpus)  # what only these two behaviours use
    tally = Tally(started=time.monotonic())
    abused = Tally(started=tally.started)
    deadline = tally.started + args.seconds
    rss: list[tuple[float, float]] = []
    tasks = [
        asyncio.create_task(_client(service.mcp_url, keys[n % len(keys)], n, deadline, tally))
        for n in range(args.clients)
    ]
    tasks.append(asyncio.create_task(_sample_rss(service.process.pid, deadline + 1, rss)))
    if args.kill_postgres_at is not None:
        tasks.append(asyncio.create_task(_kill_postgres(service, args.kill_postgres_at, tally)))
    if abuser is not None:
        tasks.append(asyncio.create_task(_abuse_elsewhere(abuser, deadline, abused)))
    cpu_before, process_before = _cpu_seconds(service), time.process_time()
    await asyncio.wait_for(asyncio.gather(*tasks), args.seconds + GRACE_S)
    tally.ended = abused.ended = time.monotonic()
    tally.rss_mib = rss
    cpu = {
        name: round(after - cpu_before.get(name, 0.0), 1)
        for name, after in _cpu_seconds(service).items()
    }
    tally.cpu_seconds = {
        **cpu,
        "well-behaved clients": round(time.process_time() - process_before, 1),
    }
    if abuser is not None:
        tally.cpu_seconds["abuser"] = round(abused.cpu_seconds.get("abuser", 0.0), 1)
    return tally, abused


async def _abuse_elsewhere(abuser: abuse.Abuser, deadline: float, tally: Tally) -> None:
    """The abuser in a process of its own, so that its workers never hold the event loop
    the well-behaved clients' latencies are measured on (the machine's cores stay shared)."""
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        outcomes, cpu = await loop.run_in_executor(pool, abuse.run_abuse, abuser, deadline)
    tally.outcomes.extend(outcomes)
    tally.cpu_seconds["abuser"] = cpu


def _cpu_seconds(service: harness.Service) -> dict[str, float]:
    """CPU seconds (user + system) so far of ``serve`` with its children, and of the
    embedded Postgres (the postmaster and its backends)."""

    def tree(pid: int | None) -> float:
        if pid is None:
            return 0.0
        total = 0.0
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    times = process.cpu_times()
                    total += times.user + times.system
        return total

    postmaster = harness.postmaster_pid(service.pgdata) if service.pgdata else None
    return {"serve": tree(service.process.pid), "postgres": tree(postmaster)}


def _logged_errors(log_path: Path) -> dict[str, int]:
    """Error-level lines and tracebacks the service logged during the run."""
    text = log_path.read_text(errors="replace")
    return {
        "error_lines": text.count('"level": "error"'),
        "tracebacks": text.count("Traceback (most recent call last)"),
        "log_lines": text.count("\n"),
    }


def run_side(args: argparse.Namespace, abusive: bool) -> dict[str, Any]:
    """One soak on a fresh service, with the abusive key when ``abusive``."""
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine.machine_facts(), "settings": _settings(args)}
    options = harness.ServiceOptions(extra_env=dict(args.env))
    with harness.scratch_dir() as data_dir:
        env = harness.service_env(data_dir, options)
        keys = [harness.new_key(env, f"soak-{n}", create_tenant=True) for n in range(args.tenants)]
        bad_key = harness.new_key(env, "soak-abuser", create_tenant=True) if abusive else ""
        with harness.serving(env, data_dir, keys[0]) as service:
            abuser = None
            if abusive:
                workers = args.abuse
                abuser = abuse.Abuser(service.base_url, bad_key, args.abuser_address, workers)
            tally, abused = asyncio.run(_soak(service, keys, args, abuser))
            results["logged"] = _logged_errors(service.log_path)
    results.update(summary(tally, warmup_s=min(WARMUP_S, args.seconds / 10)))
    if abusive:
        results["abuse_workers"] = ", ".join(f"{k}={n}" for k, n in args.abuse.items())
        results["abuser"] = abuser_summary(abused)
    machine.record_end(results, started)
    return results


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {**vars(args), "out": str(args.out)}


def run(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The results and their Markdown: one soak, or the clean and abusive pair."""
    if not args.compare_clean:
        side = run_side(args, args.abusive)
        text = tables(side)
        if args.abusive:
            text += "\n" + "\n".join(abuser_table(side["abuser"])) + "\n"
        return side, text
    clean = run_side(args, abusive=False)
    results = {"settings": _settings(args), **combine(clean, run_side(args, abusive=True))}
    return results, compare_tables(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="run time (default 600)")
    parser.add_argument("--clients", type=int, default=50, help="MCP sessions (default 50)")
    parser.add_argument("--tenants", type=int, default=5, help="tenants, one key each")
    parser.add_argument(
        "--env",
        type=env_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a service setting (repeatable)",
    )
    parser.add_argument(
        "--kill-postgres-at",
        type=float,
        default=None,
        metavar="SECONDS",
        help="kill -9 the embedded postmaster once, this many seconds in",
    )
    _abuse_options(parser)
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/soak.json")
    args = parser.parse_args()
    if args.seconds <= 0 or args.clients < 1 or args.tenants < 1:
        parser.error("--seconds, --clients and --tenants must be positive")
    if args.out is None:
        args.out = ABUSIVE_OUT if args.abusive or args.compare_clean else DEFAULT_OUT
    results, text = run_or_exit(lambda: run(args))
    write_results(args.out, results, text)


def _workers(text: str) -> dict[str, int]:
    try:
        return abuse.parse_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _abuse_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--abusive", action="store_true", help="add one abusive key (bench/soak/abuse.py)"
    )
    parser.add_argument(
        "--compare-clean",
        action="store_true",
        help="run without, then with the abusive key; report the ratios (bench.soak.compare)",
    )
    parser.add_argument(
        "--abuse",
        type=_workers,
        default=abuse.parse_workers(DEFAULT_ABUSE),
        metavar="BEHAVIOUR=N,...",
        help=f"workers per abusive behaviour, 0 or unnamed = off (default {DEFAULT_ABUSE})",
    )
    parser.add_argument(
        "--abuse-corpus",
        type=int,
        default=400,
        help="16,000-character memories the abuser stores first (default 400)",
    )
    parser.add_argument(
        "--abuser-address",
        default="127.0.0.2",
        help="the loopback address the abuser calls from (default 127.0.0.2)",
    )


if __name__ == "__main__":
    main()
