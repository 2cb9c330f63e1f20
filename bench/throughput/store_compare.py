"""Store latency of this checkout against another one, in alternating rounds of one run.

Run: ``.venv/bin/python -m bench.throughput.store_compare --compare PATH [--rounds 10]
[--calls 100] [--warmup 30]``.

Both versions run as real ``serve`` processes at once (snapshots of the two checkouts, each
with its own fresh embedded Postgres and default settings), and one MCP client stores short
texts into each in turn: ``--rounds`` rounds of ``--calls`` stores, the version that goes
first alternating. A machine whose speed drifts during the run (it is shared) then drifts
for both alike, which is what a before/after of a few percent needs. The report is each
version's p50/p95 over all its calls and the median of its per-round p50s, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from bench.harness import serving as harness
from bench.harness.cli import run_or_exit, write_results
from bench.harness.client import mcp_session
from bench.harness.snapshot import snapshot_code

DEFAULT_OUT = harness.REPO_ROOT / "bench" / "results" / "store-compare.json"


@contextlib.contextmanager
def _version(code: Path, name: str) -> Iterator[harness.Service]:
    """``serve`` from snapshot ``code`` on a fresh data directory, with a tenant and key."""
    with harness.scratch_dir() as data_dir:
        env = harness.service_env(data_dir, harness.ServiceOptions())
        key = harness.new_key(env, f"cmp-{name}", create_tenant=True, cwd=code)
        with harness.serving(env, data_dir, key, cwd=code) as service:
            yield service


async def _stores(session: ClientSession, tag: str, count: int, start: int) -> list[float]:
    """``count`` stores of short distinct texts; each call's seconds."""
    seconds = []
    for n in range(start, start + count):
        message = {"content": f"{tag} note {n}: the meeting moved to room {n % 97}"}
        began = time.perf_counter()
        await session.call_tool("store", {"agent_id": "bench", "message": message})
        seconds.append(time.perf_counter() - began)
    return seconds


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _alternate(services: dict[str, harness.Service], args: argparse.Namespace) -> Any:
    names = list(services)
    async with contextlib.AsyncExitStack() as stack:
        sessions = {
            name: await stack.enter_async_context(
                mcp_session(services[name].mcp_url, services[name].key)
            )
            for name in names
        }
        for name in names:
            await _stores(sessions[name], "warmup", args.warmup, 0)
        calls: dict[str, list[float]] = {name: [] for name in names}
        rounds: dict[str, list[float]] = {name: [] for name in names}
        for number in range(args.rounds):
            order = names if number % 2 == 0 else names[::-1]
            for name in order:
                taken = await _stores(sessions[name], "round", args.calls, number * args.calls)
                calls[name] += taken
                rounds[name].append(_p(taken, 0.5))
    return calls, rounds


def _summary(calls: dict[str, list[float]], rounds: dict[str, list[float]]) -> dict[str, Any]:
    versions: dict[str, Any] = {
        name: {
            "calls": len(taken),
            "p50_ms": round(_p(taken, 0.5), 2),
            "p95_ms": round(_p(taken, 0.95), 2),
            "median_round_p50_ms": round(statistics.median(rounds[name]), 2),
            "round_p50s_ms": [round(value, 2) for value in rounds[name]],
        }
        for name, taken in calls.items()
    }
    this, other = versions["this"], versions["compare"]
    versions["ratio_p50"] = round(this["p50_ms"] / other["p50_ms"], 4)
    versions["ratio_median_round_p50"] = round(
        this["median_round_p50_ms"] / other["median_round_p50_ms"], 4
    )
    return versions


def run(args: argparse.Namespace) -> dict[str, Any]:
    with harness.scratch_dir() as runtime:
        codes = {
            "this": snapshot_code(runtime, harness.REPO_ROOT, "this"),
            "compare": snapshot_code(runtime, args.compare.resolve(), "compare"),
        }
        with _version(codes["this"], "this") as this, _version(codes["compare"], "cmp") as other:
            calls, rounds = asyncio.run(_alternate({"this": this, "compare": other}, args))
    settings = {
        key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()
    }
    return {"settings": settings, **_summary(calls, rounds)}


def _table(results: dict[str, Any]) -> str:
    lines = ["| Version | Calls | p50 ms | p95 ms | median round p50 ms |"]
    lines.append("|---|--:|--:|--:|--:|")
    for name in ("this", "compare"):
        v = results[name]
        cells = (name, v["calls"], v["p50_ms"], v["p95_ms"], v["median_round_p50_ms"])
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    lines.append(
        f"\nthis / compare: p50 {results['ratio_p50']}, "
        f"median round p50 {results['ratio_median_round_p50']}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100, help="stores per version per round")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    results = run_or_exit(lambda: run(args))
    write_results(args.out, results, _table(results))


if __name__ == "__main__":
    main()
