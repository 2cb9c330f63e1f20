"""Floods: another tenant's latency while one key runs at its concurrency cap, and while
an address sends bogus keys (issue 36, 9).

Run: ``.venv/bin/python -m bench.soak.floods [--seconds 5] [--env NAME=VALUE ...]
[--out bench/results/floods.json]``.

One real ``serve`` (embedded Postgres, loopback) with two tenants. The victim calls
``list_memories`` back to back from one client; its p50/p95 are taken three ways:
idle, while the flooder's key keeps ``--flood`` calls (``store`` and ``list_memories``)
in flight, and while ``--flood`` clients send bogus keys as fast as they are answered.
Compare with ``--env CPERSONA_LANE_TENANT_SHARE=1 --env CPERSONA_AUTH_FAILURE_RATE=0
--env CPERSONA_AUTH_MISS_CACHE=0`` (the protections off).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.harness import machine, serving as harness
from bench.harness.cli import env_pair, run_or_exit, write_results

DEFAULT_OUT = harness.REPO_ROOT / "bench" / "results" / "floods.json"
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


async def _victim(http: httpx.AsyncClient, url: str, key: str, until: float) -> dict[str, Any]:
    """Back-to-back list_memories calls until ``until``: p50, p95 and their count."""
    headers = {**HEADERS, "authorization": f"Bearer {key}"}
    times: list[float] = []
    while time.monotonic() < until:
        started = time.perf_counter()
        reply = await http.post(url, json=_call("list_memories", {}), headers=headers)
        if reply.status_code == 200:
            times.append((time.perf_counter() - started) * 1000)
    quantiles = statistics.quantiles(times, n=20)
    return {
        "calls": len(times),
        "p50_ms": round(quantiles[9], 1),
        "p95_ms": round(quantiles[18], 1),
    }


async def _flooder(http: httpx.AsyncClient, url: str, key: str | None, until: float) -> int:
    """One closed-loop flooding client: the flooder's key, or a new bogus key each call."""
    answered = 0
    for n in itertools.count():
        if time.monotonic() >= until:
            return answered
        credential = key or f"cpk_{secrets.token_hex(20)}"
        call = _call("store", {"agent_id": "f", "message": {"content": f"flood {n}"}})
        body = call if n % 2 else _call("list_memories", {})
        headers = {**HEADERS, "authorization": f"Bearer {credential}"}
        reply = await http.post(url, json=body, headers=headers)
        answered += 1
        if reply.status_code in (429, 503):
            await asyncio.sleep(0.005)
    return answered


async def _scenario(url: str, victim: str, flood_key: str | None, args: argparse.Namespace) -> Any:
    limits = httpx.Limits(max_connections=args.flood + 4)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        until = time.monotonic() + args.seconds
        floods = [
            asyncio.create_task(_flooder(http, url, flood_key, until))
            for _ in range(args.flood if flood_key != "idle" else 0)
        ]
        result = await _victim(http, url, victim, until)
        result["flood_answers"] = sum(await asyncio.gather(*floods))
    return result


async def _bench(url: str, victim: str, flooder: str, args: argparse.Namespace) -> Any:
    await _scenario(url, victim, "idle", argparse.Namespace(**{**vars(args), "seconds": 1}))
    return {
        "idle": await _scenario(url, victim, "idle", args),
        "key_at_its_cap": await _scenario(url, victim, flooder, args),
        "bogus_keys": await _scenario(url, victim, None, args),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine.machine_facts(), "settings": vars(args).copy()}
    results["settings"]["out"] = str(args.out)
    options = harness.ServiceOptions(extra_env=dict(args.env))
    with harness.scratch_dir() as data_dir:
        env = harness.service_env(data_dir, options)
        victim = harness.new_key(env, "victim", create_tenant=True)
        flooder = harness.new_key(env, "flooder", create_tenant=True)
        with harness.serving(env, data_dir, victim) as service:
            results["scenarios"] = asyncio.run(_bench(service.mcp_url, victim, flooder, args))
    machine.record_end(results, started)
    return results


def table(results: dict[str, Any]) -> str:
    """The victim's latency per scenario, as Markdown."""
    lines = [
        "| Scenario | victim p50 ms | victim p95 ms | victim calls | flood answers |",
        "|---|---|---|---|---|",
    ]
    for name, row in results["scenarios"].items():
        cells = (name, row["p50_ms"], row["p95_ms"], row["calls"], row["flood_answers"])
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _write(out: Path, results: dict[str, Any]) -> None:
    write_results(out, results, table(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per scenario (default 5)")
    parser.add_argument("--flood", type=int, default=16, help="flooding clients (default 16)")
    parser.add_argument("--env", type=env_pair, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    run_or_exit(lambda: _write(args.out, run(args)))


if __name__ == "__main__":
    main()
