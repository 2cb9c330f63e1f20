"""Every console page's time through HTTP at 10k (or 100k) memories in one agent, and the
search page against a recall through MCP in the same run (issue 35's speed targets).

``python -m bench.console.pages [--size 10k] [--rounds 60] [--warmup 5]``

A fresh data directory gets one tenant and one agent of ``--size`` memories, bulk-loaded
with their vectors (:mod:`bench.latency.loader`, local embeddings as the latency
benchmarks use) and spread over two projects and the global pool. A real ``serve`` runs;
one HTTP client signs in to the console with the tenant's key (a server-side session, as a
browser would) and then, round after round, requests each page once, in turn: the
agents page, an agent's list (page 1 and a later keyset page, the 21st), the list filtered
by project and days, the search page (a new query each round), the search with days (the
time cue), a record page, and usage; beside them the same query as a ``recall`` through
MCP (JSON-RPC ``tools/call`` over the same kind of HTTP client, the server stateless),
and a recall with a one-month cue (a narrow period, against the dated search's year).
Interleaving the pages round by round lets the machine's load fall on all of them alike.

Each sample is the time from sending the request to the last byte of the answer, over
loopback with a kept-alive connection: the server's time plus the loopback transfer (an
upper bound of the server time). p50, p95 and max per page are reported; the search is
compared with the recall (p95 difference; the target is at most 20 ms more).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import html
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.harness import serving as harness
from bench.harness.cli import run_or_exit, write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.harness.stats import latency_stats
from bench.latency import loader
from bench.latency.probe import LOCAL
from bench.latency.queries import query_texts
from bench.latency.scenarios import REBUILD_FROM_ROWS, embedded_postgres

DEFAULT_OUT = Path("bench/results/console-pages.json")
TENANT = "console-bench"
AGENT = "scout"
MIN_SIZE = 1_100
"""Enough rows for the later keyset page."""
LATER_PAGE = 21
"""The keyset page timed as "a later page" (rows 1,001..1,050 of the list)."""
TARGET_P95_MS = {10_000: 100.0, 100_000: 200.0}
SEARCH_OVER_RECALL_MS = 20.0
HTTP_TIMEOUT_S = 60.0
PROJECTS = ("atlas", "borealis", "")
"""The agent's rows cycle through two projects and the global pool, written so by the bulk
load's COPY (the list's project filter then reads a third of them)."""
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_OLDER = re.compile(r'<a href="/console/agent\?([^"]+)">Older</a>')
_REF = re.compile(r"<code>(mem:\d+)</code>")


def parse_size(text: str) -> int:
    """``10k``, ``100k``, ``1m`` or a plain number of memories."""
    value = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(value[-1:], 1)
    number = value[:-1] if scale > 1 else value
    try:
        size = int(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
    if size < MIN_SIZE:
        raise argparse.ArgumentTypeError(f"at least {MIN_SIZE} memories")
    return size


@dataclasses.dataclass
class Client:
    """A signed-in console person and an MCP caller, over two kept-alive HTTP clients."""

    base_url: str
    key: str
    console: httpx.AsyncClient
    mcp: httpx.AsyncClient
    calls: int = 0

    async def page(self, path: str, params: dict[str, str]) -> str:
        """A console page (200 expected); its HTML."""
        answer = await self.console.get(path, params=params)
        if answer.status_code != 200:
            raise harness.BenchError(f"{path} answered {answer.status_code}: {answer.text[:200]}")
        return answer.text

    async def recall(self, query: str, time_cue: dict[str, str] | None = None) -> None:
        """``recall`` through MCP at the console search's limit (20 rows), with the time
        cue the console's days become when ``time_cue`` is given."""
        self.calls += 1
        arguments: dict[str, object] = {"agent_id": AGENT, "query": query, "limit": 20}
        if time_cue is not None:
            arguments["time_cue"] = {**time_cue, "confidence": "sure"}
        payload = {
            "jsonrpc": "2.0",
            "id": self.calls,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": arguments},
        }
        answer = await self.mcp.post("/mcp", json=payload)
        if answer.status_code != 200 or '"isError":true' in answer.text.replace(" ", ""):
            raise harness.BenchError(f"recall answered {answer.status_code}: {answer.text[:200]}")


async def sign_in(base_url: str, key: str) -> Client:
    """Sign in to the console with ``key`` (the form, its token, the session cookie)."""
    console = httpx.AsyncClient(base_url=base_url, timeout=HTTP_TIMEOUT_S)
    form = await console.get("/console/sign-in")
    token = _CSRF.search(form.text)
    if token is None:
        raise harness.BenchError("the sign-in form carries no token")
    done = await console.post("/console/sign-in", data={"csrf": token.group(1), "api_key": key})
    if done.status_code != 303:
        raise harness.BenchError(f"sign-in answered {done.status_code}")
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    mcp = httpx.AsyncClient(base_url=base_url, timeout=HTTP_TIMEOUT_S, headers=headers)
    return Client(base_url, key, console, mcp)


async def later_page(client: Client) -> dict[str, str]:
    """The query string of the list's page :data:`LATER_PAGE`, by following "Older"."""
    params = {"agent": AGENT}
    for _ in range(LATER_PAGE - 1):
        found = _OLDER.search(await client.page("/console/agent", params))
        if found is None:
            raise harness.BenchError("the list ended before the later page")
        pairs = [pair.split("=", 1) for pair in html.unescape(found.group(1)).split("&")]
        params = {name: httpx.QueryParams(f"x={value}")["x"] for name, value in pairs}
    return params


Request = Callable[[int], Awaitable[object]]


QUERIES_PER_ROUND = 5
"""Each search and recall of a round has a query of its own: the service caches query
embeddings, so a query searched then recalled would find its vector ready the second time."""


def requests(
    client: Client, queries: Sequence[str], later: dict[str, str], ref: str
) -> dict[str, Request]:
    """Each timed page, as a function of the round (the round picks the queries)."""
    agent = {"agent": AGENT}
    days = {"from": "2025-01-01", "to": "2025-12-31"}
    cue = {"after": days["from"], "before": days["to"]}
    month = {"after": "2025-06-01", "before": "2025-06-30"}

    def query(n: int, which: int) -> str:
        return queries[n * QUERIES_PER_ROUND + which]

    return {
        "agents": lambda n: client.page("/console/agents", {}),
        "list, page 1": lambda n: client.page("/console/agent", agent),
        f"list, page {LATER_PAGE} (keyset)": lambda n: client.page("/console/agent", later),
        "list, project + days": lambda n: client.page(
            "/console/agent", {**agent, "project": "atlas", **days}
        ),
        "search": lambda n: client.page("/console/search", {**agent, "q": query(n, 0)}),
        "search + days (time cue)": lambda n: client.page(
            "/console/search", {**agent, "q": query(n, 1), **days}
        ),
        "record": lambda n: client.page("/console/record", {**agent, "ref": ref}),
        "usage": lambda n: client.page("/console/usage", {}),
        "recall through MCP": lambda n: client.recall(query(n, 2)),
        "recall + time cue through MCP": lambda n: client.recall(query(n, 3), cue),
        "recall + a month's cue through MCP": lambda n: client.recall(query(n, 4), month),
    }


async def measure(service: harness.Service, rounds: int, warmup: int) -> dict[str, Any]:
    """The rounds: every page once per round, in turn; warm-up rounds are not kept."""
    client = await sign_in(service.base_url, service.key)
    try:
        first = await client.page("/console/agent", {"agent": AGENT})
        refs = _REF.findall(first)
        if not refs:
            raise harness.BenchError("the agent's list shows no memory")
        later = await later_page(client)
        queries = query_texts((warmup + rounds) * QUERIES_PER_ROUND, 35)
        timed = requests(client, queries, later, refs[len(refs) // 2])
        samples: dict[str, list[float]] = {name: [] for name in timed}
        started = time.perf_counter()
        for n in range(warmup + rounds):
            for name, request in timed.items():
                mark = time.perf_counter()
                await request(n)
                if n >= warmup:
                    samples[name].append(time.perf_counter() - mark)
        wall = time.perf_counter() - started
    finally:
        await client.console.aclose()
        await client.mcp.aclose()
    return {
        name: dataclasses.asdict(latency_stats(values, wall)) for name, values in samples.items()
    }


async def seed(url: str, size: int) -> loader.LoadReport:
    """The agent's ``size`` memories, spread over :data:`PROJECTS` by the COPY itself (one
    write per row: an ``UPDATE`` afterwards would re-insert every row into every index,
    HNSW included); above ``REBUILD_FROM_ROWS`` the indexes are dropped and built once
    after the COPY (:func:`bench.latency.loader.load`)."""
    plan = [loader.AgentLoad(TENANT, AGENT, size, PROJECTS)]
    return await loader.load(url, plan, rebuild_indexes=size >= REBUILD_FROM_ROWS)


def load(url: str, size: int) -> dict[str, Any]:
    """Seed the agent; the load's report (seconds per step, sizes)."""
    return dataclasses.asdict(asyncio.run(seed(url, size)))


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {"machine": machine_facts(), "size": args.size}
    results["command"] = f"python -m bench.console.pages --size {args.size_text}"
    with harness.scratch_dir(args.keep_data) as data_dir:
        env = harness.service_env(data_dir, harness.ServiceOptions(extra_env=LOCAL))
        key = harness.new_key(env, TENANT, create_tenant=True)
        with embedded_postgres(data_dir) as url:
            print(f"loading {args.size:,} memories", file=sys.stderr)
            results["load"] = load(url, args.size)
            print(load_line(results["load"]), file=sys.stderr)
            with harness.serving(env, data_dir, key, stop_postgres=False) as service:
                results["pages"] = asyncio.run(measure(service, args.rounds, args.warmup))
    record_end(results, started)
    return results


def load_line(report: dict[str, Any]) -> str:
    """The bulk load's steps in seconds (where a slow seed spends its time)."""
    indexes = report.get("index_seconds") or {}
    built = (
        f"index builds {sum(indexes.values()):.1f} s (the HNSW "
        f"{sum(v for k, v in indexes.items() if 'embedding' in k):.1f} s)"
        if indexes
        else "indexes maintained by the COPY"
    )
    return (
        f"Load: {report['rows']:,} rows; COPY {report['copy_seconds']:.1f} s, {built}, "
        f"VACUUM (ANALYZE) {report['vacuum_analyze_seconds']:.1f} s; "
        f"total {report['total_seconds']:.1f} s."
    )


def markdown(results: dict[str, Any]) -> str:
    """The table of docs/benchmarks/console.md for one run."""
    size = int(results["size"])
    target = TARGET_P95_MS.get(size)
    pages = results["pages"]
    rows = []
    for name, stats in pages.items():
        verdict = "" if target is None else ("yes" if stats["p95_ms"] <= target else "**no**")
        rows.append(
            [
                name,
                f"{stats['p50_ms']:.1f}",
                f"{stats['p95_ms']:.1f}",
                f"{stats['max_ms']:.1f}",
                verdict,
            ]
        )
    search = pages["search"]["p95_ms"] - pages["recall through MCP"]["p95_ms"]
    dated = pages["search + days (time cue)"]["p95_ms"]
    dated -= pages["recall + time cue through MCP"]["p95_ms"]
    lines = [
        f"### {size:,} memories in one agent",
        "",
        machine_line(results["machine"]),
        f"Command: `{results['command']}`; {pages['search']['count']} rounds.",
        *([load_line(results["load"])] if "load" in results else []),
        "",
        *table(
            [
                "Page",
                "p50 ms",
                "p95 ms",
                "max ms",
                f"p95 ≤ {target:.0f} ms" if target else "target",
            ],
            "lrrrl",
            rows,
        ),
        "",
        f"Search p95 minus recall-through-MCP p95: {search:+.1f} ms (target: at most "
        f"+{SEARCH_OVER_RECALL_MS:.0f} ms); with days, against recall with the same time "
        f"cue: {dated:+.1f} ms.",
        "",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.console.pages", description=__doc__)
    parser.add_argument("--size", dest="size_text", default="10k", help="memories: 10k, 100k")
    parser.add_argument("--rounds", type=int, default=60, help="timed rounds (default 60)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--keep-data", action="store_true")
    args = parser.parse_args(argv)
    args.size = parse_size(args.size_text)
    return args


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM (a ``timeout`` running out) as Ctrl-C: the ``with`` blocks then stop
    ``serve`` and the embedded Postgres and remove the data directory, which a plain
    SIGTERM would leave running."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    results = run_or_exit(lambda: run(args))
    out = args.out.with_name(f"{args.out.stem}-{args.size_text}{args.out.suffix}")
    write_results(out, results, markdown(results))


if __name__ == "__main__":
    main()
