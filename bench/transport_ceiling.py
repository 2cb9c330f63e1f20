"""What the MCP transport alone costs here: the ceiling under every tool's throughput.

Starts :mod:`bench.transport_server` (the SDK's server, one tool that does nothing,
served like ``serve`` serves the memory tools) and calls it through the official client
exactly as the other benchmarks call the service: one session per client, concurrent
clients, each call awaited. It reports calls per second, latency, and the CPU each side
spent per call. No tool of the service can be faster than this on the same machine with
the client on it; a target above it is out of reach whatever the service does.

    .venv/bin/python -m bench.transport_ceiling --calls 2000 --clients 1,8,32 --chars 100,6000

``--chars`` sets the reply text's size: ~100 is a ``store`` acknowledgement, ~6,000 a
default ``recall`` answer (about 1,500 tokens).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench import harness
from bench.client import call_json, mcp_sessions
from bench.machine import machine_facts, record_end
from bench.stats import latency_stats

READY_TIMEOUT_S = 30.0


def _csv_ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per run")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured calls per run")
    parser.add_argument("--clients", type=_csv_ints, default=[1, 8, 32])
    parser.add_argument("--chars", type=_csv_ints, default=[100, 6000], help="reply sizes")
    parser.add_argument("--out", type=Path, default=Path("bench/results/transport_ceiling.json"))
    return parser.parse_args(argv)


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    """Until the server answers an HTTP request (any status) or exits."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise harness.BenchError(f"transport server exited with {process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                http.get(url)
                return
            time.sleep(0.1)
    raise harness.BenchError("transport server not ready")


@contextlib.contextmanager
def transport_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The no-op server on a free loopback port; its ``/mcp`` URL and process."""
    port = harness.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.transport_server", "--port", str(port)],
        cwd=harness.REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://{harness.LOOPBACK}:{port}/mcp"
    try:
        _wait_ready(url, process)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user) + float(times.system)


async def _calls(
    url: str, server: psutil.Process, clients: int, chars: int, warmup: int, calls: int
) -> dict[str, Any]:
    """``warmup`` then ``calls`` no-op calls shared by ``clients`` sessions; the CPU of
    ``server`` (the no-op server's process) and of this process per measured call."""
    async with mcp_sessions(url, "no-credential", clients) as sessions:

        async def drain(budget: list[int], latencies: list[float] | None) -> None:
            session = sessions.pop()
            try:
                while budget[0] > 0:
                    budget[0] -= 1
                    reply = await call_json(session, "noop", {"chars": chars})
                    if reply.failed:
                        raise harness.BenchError(f"noop failed: {reply.body}")
                    if latencies is not None:
                        latencies.append(reply.seconds)
            finally:
                sessions.append(session)

        workers = list(sessions)
        await asyncio.gather(*(drain([warmup // clients + 1], None) for _ in workers))
        latencies: list[float] = []
        budget = [calls]
        server_before, client_before = _cpu_s(server), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(drain(budget, latencies) for _ in workers))
        wall = time.perf_counter() - started
        server_cpu = _cpu_s(server) - server_before
        client_cpu = time.process_time() - client_before
    stats = latency_stats(latencies, wall).__dict__
    per_call = {
        "server_ms": round(1000 * server_cpu / len(latencies), 2),
        "client_ms": round(1000 * client_cpu / len(latencies), 2),
    }
    return {"clients": clients, "chars": chars, **stats, "cpu_per_call": per_call}


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine_facts(), "runs": []}
    with transport_server() as (url, process):
        server = psutil.Process(process.pid)
        for chars in args.chars:
            for clients in args.clients:
                row = asyncio.run(_calls(url, server, clients, chars, args.warmup, args.calls))
                results["runs"].append(row)
                print(
                    f"{chars:>6} chars {clients:>3} clients: {row['throughput_per_s']:>6.1f} "
                    f"calls/s, p50 {row['p50_ms']:.1f} p95 {row['p95_ms']:.1f} ms, CPU per call "
                    f"server {row['cpu_per_call']['server_ms']} client "
                    f"{row['cpu_per_call']['client_ms']} ms",
                    flush=True,
                )
    record_end(results, started)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    results = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
