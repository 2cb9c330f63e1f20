"""What the MCP transport alone costs here: the ceiling under every tool's throughput.

Starts :mod:`bench.throughput.transport_server` (the SDK's server, one tool that does nothing,
served like ``serve`` serves the memory tools) and calls it through the official client
exactly as the other benchmarks call the service: one session per client, concurrent
clients, each call awaited. It reports calls per second, latency, and the CPU each side
spent per call. No tool of the service can be faster than this on the same machine with
the client on it; a target above it is out of reach whatever the service does.

    .venv/bin/python -m bench.throughput.transport_ceiling --calls 2000 --clients 1,8,32 \
        --chars 100,6000

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

from mcp.client.session import ClientSession

from bench.harness import serving as harness
from bench.harness.client import call_json, mcp_sessions
from bench.harness.cpu import process_cpu
from bench.harness.machine import machine_facts, record_end
from bench.harness.stats import latency_stats

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


@contextlib.contextmanager
def transport_server(*, raw: bool = False) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The no-op server on a free loopback port, ready (``/readyz``); its ``/mcp`` URL and
    process (``raw``: the minimal echo without the SDK). Its output goes to a log in a
    scratch directory, quoted if it fails to start."""
    port = harness.free_port()
    base_url = f"http://{harness.LOOPBACK}:{port}"
    with harness.scratch_dir() as scratch:
        log_path = scratch / "transport-server.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.throughput.transport_server",
                    "--port",
                    str(port),
                    *(["--raw"] if raw else []),
                ],
                cwd=harness.REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            harness.wait_ready(base_url, process, log_path, READY_TIMEOUT_S)
            yield f"{base_url}/mcp", process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def _calls(
    url: str, server: int, clients: int, chars: int, warmup: int, calls: int
) -> dict[str, Any]:
    """``warmup`` then ``calls`` no-op calls shared by ``clients`` sessions; the CPU of
    ``server`` (the no-op server's pid) and of this process per measured call."""
    async with mcp_sessions(url, "no-credential", clients) as sessions:

        async def drain(session: ClientSession, budget: list[int], latencies: list[float]) -> None:
            while budget[0] > 0:
                budget[0] -= 1
                reply = await call_json(session, "noop", {"chars": chars})
                if reply.failed:
                    raise harness.BenchError(f"noop failed: {reply.body}")
                latencies.append(reply.seconds)

        await asyncio.gather(*(drain(s, [warmup // clients + 1], []) for s in sessions))
        latencies: list[float] = []
        budget = [calls]
        server_before, client_before = process_cpu(server), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(drain(s, budget, latencies) for s in sessions))
        wall = time.perf_counter() - started
        server_cpu = process_cpu(server) - server_before
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
        server = process.pid
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
