"""Where one call's time goes: ``recall`` and ``store`` through MCP, phase by phase.

``python -m bench.latency.breakdown [--sizes 1k,10k] [--calls N] [--warmup N]``

For each size an agent of that many memories is bulk-loaded (:mod:`bench.latency.scenarios`,
the LoCoMo-derived corpus by default) and a real ``serve`` runs with timers around the
service's functions (:mod:`bench.latency.instrument`, installed from outside through
``PYTHONPATH``; ``service/`` is unchanged). One official-SDK client over HTTP then calls
``recall`` (a different question each time) and ``store`` (a new text each time) in
sequence; each call's server-side intervals are attributed to phases
(:mod:`bench.latency.phases`) and the client's latency minus the server's time is the
client, HTTP and uvicorn outside the app. The transport's own floor is the SDK's server with
one tool that does nothing (:mod:`bench.throughput.transport_server`), called the same way
with replies of a ``store``'s and a ``recall``'s size.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.corpora.locomo import DEFAULT_DATA
from bench.harness import serving as harness
from bench.harness.cli import run_or_exit, write_results
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.latency import loader as corpus, passages
from bench.latency.instrument import ENV_OUT
from bench.latency.phases import ORDER, TOTAL, pair_calls, summarise
from bench.latency.probe import LOCAL, Target, measure, store_request
from bench.latency.scenarios import TIERS, _load, _query_texts, embedded_postgres
from bench.latency.synthetic import SEED
from bench.throughput.transport_ceiling import _calls as transport_calls, transport_server

DEFAULT_OUT = Path("bench/results/breakdown.json")
TOOLS = ("recall", "store")
HOOK = Path(__file__).parent / "hook"


def instrumented_env(data_dir: Path, records: Path) -> dict[str, str]:
    """The ``serve`` environment with the timers installed (local embeddings)."""
    path = f"{HOOK}:{harness.REPO_ROOT}"
    extra = {**LOCAL, ENV_OUT: str(records), "PYTHONPATH": path}
    return harness.service_env(data_dir, harness.ServiceOptions(extra_env=extra))


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines the instrumented ``serve`` wrote (one per request)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def store_texts(count: int, tier: str) -> list[str]:
    """New memory texts, none a duplicate of the corpus or of each other."""
    return [
        f"Breakdown note {tier}-{i}: the user moved the meeting to {i % 28 + 1} March."
        for i in range(count)
    ]


def _tool_phases(
    service: harness.Service,
    target: Target,
    texts: Sequence[str],
    tool: str,
    records: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One client's sequential calls of ``tool``, paired with the server's records."""
    request = store_request if tool == "store" else None
    extra = {"request": request} if request else {}
    run = asyncio.run(measure(service, [target], texts, 1, args.warmup, args.max_seconds, **extra))
    served = read_records(records)
    calls = pair_calls(run["samples_s"], served, tool)
    return {
        "calls": len(calls),
        "failures": run["failures"],
        "phases": [dataclasses.asdict(row) for row in summarise(calls)],
        "sql_round_trips": statistics.median(c.sql_round_trips for c in calls),
        "statements": usual_statements(served, tool, len(calls)),
    }


def usual_statements(records: Sequence[dict[str, Any]], tool: str, calls: int) -> list[Any]:
    """The round trips of the last ``calls`` calls of ``tool``, in order: each distinct
    sequence of statements with how many calls ran it, the most frequent first."""
    mine = [r for r in records if r.get("tool") == tool][-calls:] if calls else []
    seen = collections.Counter(tuple(r.get("statements", ())) for r in mine)
    return [{"calls": n, "statements": list(seq)} for seq, n in seen.most_common()]


def measure_tier(
    args: argparse.Namespace, home: tuple[Path, str, str], tier: str
) -> dict[str, Any]:
    """Load ``tier``'s agent, serve it instrumented, measure recall then store."""
    data_dir, key, url = home
    agent, rows = f"agent-{tier}", TIERS[tier]
    print(f"{tier}: loading {rows} {args.corpus} rows ...", file=sys.stderr)
    _load(args, url, [corpus.AgentLoad("scale", agent, rows)])
    if args.long_share > 0:
        print(f"{tier}: {passages.add(url, agent, args.long_share)} passages", file=sys.stderr)
    records = data_dir / f"phases-{tier}.jsonl"
    env = instrumented_env(data_dir, records)
    off = {"CPERSONA_PASSAGES": "false"} if args.passages_off else {}
    env.update(off)
    per_tool = args.calls + args.warmup
    queries = _query_texts(args, per_tool, args.seed + rows)
    plain = harness.ServiceOptions(extra_env={**LOCAL, **off})  # the timers serve only
    harness.settle(harness.service_env(data_dir, plain))
    with harness.serving(
        env, data_dir, key, log_name=f"serve-{tier}.log", stop_postgres=False
    ) as service:
        target = Target(key, agent)
        print(f"{tier}: {args.calls} calls of {', '.join(args.tools)} ...", file=sys.stderr)
        texts = {"recall": queries, "store": store_texts(per_tool, tier)}
        measured = {
            tool: _tool_phases(service, target, texts[tool], tool, records, args)
            for tool in args.tools
        }
    return {"tier": tier, "agent_rows": rows, **measured}


def transport_floor(
    args: argparse.Namespace, sizes: Sequence[int], *, raw: bool = False
) -> list[dict[str, Any]]:
    """The no-op tool over the same SDK (``raw``: the minimal echo without the SDK), one
    client, replies of each size."""
    with transport_server(raw=raw) as (url, process):
        return [
            asyncio.run(transport_calls(url, process.pid, 1, chars, args.warmup, args.calls))
            for chars in sizes
        ]


RECALL_CHARS = 6000
"""The floor's reply for a recall (a default ``recall`` answer is about this long)."""
STORE_CHARS = 100


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {k: str(v) for k, v in vars(args).items() if k != "out"},
        "tiers": [],
    }
    with (
        harness.fresh_tenant(harness.REPO_ROOT, "scale", LOCAL, keep=args.keep_data) as (
            data_dir,
            key,
        ),
        embedded_postgres(data_dir) as url,
    ):
        for tier in args.sizes:
            results["tiers"].append(measure_tier(args, (data_dir, key, url), tier))
    results["transport_floor"] = transport_floor(args, [STORE_CHARS, RECALL_CHARS])
    results["echo_floor"] = transport_floor(args, [STORE_CHARS, RECALL_CHARS], raw=True)
    record_end(results, started)
    return results


def phase_table(results: dict[str, Any]) -> list[str]:
    """Rows: the phases, SQL round trips, the transport floor; columns: p50 and mean per
    tier and tool."""
    tiers = results["tiers"]
    tools = measured_tools(results)
    columns = ["Phase"]
    for t in tiers:
        for tool in tools:
            columns += [f"{tool} {t['tier']} p50 ms", f"{tool} {t['tier']} mean ms (share)"]
    rows: list[list[object]] = []
    for index, phase in enumerate([*ORDER, TOTAL]):
        row: list[object] = [f"**{phase}**" if phase == TOTAL else phase]
        for t in tiers:
            for tool in tools:
                cell = t[tool]["phases"][index]
                row += [
                    f"{cell['p50_ms']:.2f}",
                    f"{cell['mean_ms']:.2f} ({100 * cell['share']:.0f}%)",
                ]
        rows.append(row)
    trips: list[object] = ["SQL round trips per call (median)"]
    for t in tiers:
        for tool in tools:
            trips += [t[tool]["sql_round_trips"], ""]
    rows += [trips]
    for key, label in FLOORS:
        rows.append(_floor_row(results, tiers, key, label, tools))
    return table(columns, "l" + "r" * (len(columns) - 1), rows)


FLOORS = (
    ("transport_floor", "transport floor: no-op tool, same SDK (p50 ms; server CPU ms)"),
    ("echo_floor", "minimal HTTP echo, no SDK (p50 ms; server CPU ms)"),
)
"""The floors under a call: the SDK with a tool that does nothing, and the same exchange
without the SDK (their difference is the SDK's own share)."""


def measured_tools(results: dict[str, Any]) -> list[str]:
    """The tools the run measured (``--tools``), in the table's order."""
    return [tool for tool in TOOLS if results["tiers"] and tool in results["tiers"][0]]


def _floor_row(
    results: dict[str, Any],
    tiers: Sequence[dict[str, Any]],
    key: str,
    label: str,
    tools: Sequence[str],
) -> list[object]:
    """One floor's p50 and server CPU per call, under each tool's reply size."""
    by_chars = {f["chars"]: f for f in results.get(key, [])}
    row: list[object] = [label]
    for _ in tiers:
        for tool in tools:
            chars = RECALL_CHARS if tool == "recall" else STORE_CHARS
            f = by_chars.get(chars)
            if f is None:
                row += ["n/a", f"{chars}-char reply"]
                continue
            row += [f"{f['p50_ms']:.2f}", f"{f['cpu_per_call']['server_ms']} ({chars}-char reply)"]
    return row


def statement_lines(results: dict[str, Any]) -> list[str]:
    """Each tool's round trips per size, as its calls ran them (the most frequent first)."""
    lines = []
    for t in results["tiers"]:
        for tool in measured_tools(results):
            for seq in t[tool].get("statements", []):
                trips = ", ".join(seq["statements"])
                lines.append(f"- {tool} {t['tier']} ({seq['calls']} calls): {trips}")
    return lines


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    tools = measured_tools(results)
    calls = results["tiers"][0][tools[0]]["calls"] if tools else 0
    return (
        "\n".join(
            [
                f"{machine_line(m)}. One client, {calls} measured calls per tool and size.",
                "",
                *phase_table(results),
                "",
                *statement_lines(results),
            ]
        )
        + "\n"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.breakdown", description=__doc__)
    add = parser.add_argument
    add("--sizes", default="1k,10k", help="memories in the agent (default: %(default)s)")
    add("--tools", default="recall,store", help="tools to measure (default: %(default)s)")
    add("--calls", type=int, default=100, help="measured calls per tool (default: %(default)s)")
    add("--warmup", type=int, default=10, help="unmeasured calls per tool (default: %(default)s)")
    add("--max-seconds", type=float, default=600.0, help="time limit per tool and size")
    add("--seed", type=int, default=SEED, help="corpus and query seed")
    add("--corpus", choices=("locomo", "synthetic"), default="locomo")
    add("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json (default: %(default)s)")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON results (default: %(default)s)")
    add("--keep-data", action="store_true", help="keep the temporary data directory")
    add("--long-share", type=float, default=0.0, help="share of rows given passages (issue 34)")
    add("--passages-off", action="store_true", help="serve with CPERSONA_PASSAGES=false")
    args = parser.parse_args(argv)
    args.query_set = "questions"
    args.sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    if not args.sizes or any(s not in TIERS for s in args.sizes):
        parser.error(f"--sizes takes {', '.join(TIERS)}")
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if not args.tools or any(t not in TOOLS for t in args.tools):
        parser.error(f"--tools takes {', '.join(TOOLS)}")
    if args.calls < 1 or args.warmup < 0:
        parser.error("--calls must be positive, --warmup not negative")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    results = run_or_exit(lambda: run(args))
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
