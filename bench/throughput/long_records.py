"""What long records cost on the store path and in the embedding backlog (passages).

``python -m bench.throughput.long_records [--records 1000] [--chars 16000] [--clients 8]``

Every record is real prose: LoCoMo turns (``"<speaker>: <text>"``, one a line) joined up
to ``--chars`` characters, each record starting at a different turn, so no two are the
same. The service divides each into passages of one embedding window
(docs/architecture.md, "Passages"), embedded by the write-behind and the durable queue,
never on the write path. This measures, with passages on and then off
(``CPERSONA_PASSAGES=false``), the same texts, one run:

- the import: ``--clients`` MCP sessions store the records through ``store`` (the tool an
  agent or a migration script calls; ``/v1/import`` of an export file feeds the same
  queue), each store timed; then the drain: the seconds from the first store until
  ``get_queue_status`` says nothing is pending, so every record and passage has a vector;
- one client storing ``--single`` more records afterwards, each store timed;
- the passages built and their bytes (``pg_total_relation_size``) per long record;
- and, before any service starts, the bare model (:mod:`bench.throughput.model_ceiling`)
  on exactly the texts the service embeds: the records themselves (the model reads their
  first window) and their passages as the service's own divider cuts them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import asyncpg

from bench.corpora import locomo
from bench.harness import serving as harness
from bench.harness.cli import run_or_exit, write_results
from bench.harness.client import mcp_sessions, wait_queue_empty
from bench.harness.cpu import cpu_snapshot, cpu_usage
from bench.harness.machine import machine_facts, record_end
from bench.harness.markdown import machine_line, table
from bench.harness.stats import latency_stats
from bench.throughput import db_waits, store
from bench.throughput.model_ceiling import model_ceiling

DEFAULT_OUT = Path("bench/results/long_records.json")
DRAIN_POLL_S = 0.25
"""How often ``get_queue_status`` is polled while the backlog drains (its resolution)."""
MODES = {"on": {}, "off": {"CPERSONA_PASSAGES": "false"}}
SIZES_SQL = """
SELECT (SELECT count(*) FROM passages) AS passages,
       (SELECT count(DISTINCT (item_kind, item_id)) FROM passages) AS divided_records,
       pg_total_relation_size('passages') AS passage_bytes,
       (SELECT count(*) FROM memories) AS memories,
       pg_total_relation_size('memories') AS memory_bytes
"""


# --------------------------------------------------------------------------- the texts


def long_texts(turns: Sequence[str], count: int, chars: int) -> list[str]:
    """``count`` distinct texts of at most ``chars`` characters, each of whole turns one a
    line, record ``i`` starting at turn ``i * stride`` (the turns spread over the corpus,
    which is read round when a text runs past its end)."""
    if not 0 < count <= len(turns):
        raise ValueError(f"between 1 and {len(turns)} records, one starting turn each")
    if chars < max(map(len, turns)):
        raise ValueError("a record must hold at least the longest turn")
    stride = len(turns) // count
    texts = [_joined(turns, n * stride, chars) for n in range(count)]
    if len(set(texts)) != count:
        raise ValueError("the corpus gave two identical records")
    return texts


def _joined(turns: Sequence[str], first: int, chars: int) -> str:
    """Turns from ``first`` on, one a line, while the text stays within ``chars``."""
    lines: list[str] = []
    size = -1
    for offset in range(len(turns)):
        turn = turns[(first + offset) % len(turns)]
        if size + 1 + len(turn) > chars:
            break
        lines.append(turn)
        size += 1 + len(turn)
    return "\n".join(lines)


def corpus_turns(path: Path) -> list[str]:
    """Every turn of the LoCoMo file, conversation by conversation."""
    return [t.content for c in locomo.load(path, None, 0) for t in c.turns]


def evenly(items: Sequence[str], count: int) -> list[str]:
    """``count`` items spread evenly over ``items`` (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    step = len(items) / count
    return [items[int(n * step)] for n in range(count)]


async def _divided(texts: Sequence[str]) -> tuple[list[list[str]], float]:
    """Each text's passages as the service cuts them (the local model's own token ends and
    window, the service's divider: service/memory/passages/plan.py does the same), and
    the seconds the cutting took once the model was loaded (work the service does too).

    The service is imported only when called (:mod:`bench.latency.embed` explains why)."""
    from service.embeddings.local import LocalEmbeddingProvider
    from service.memory.passages.divider import divide

    provider = LocalEmbeddingProvider()
    try:
        await provider.load()
        started = time.perf_counter()
        ends = await provider.token_ends(list(texts))
        window = provider.token_window
        passages = [
            [text[span.start : span.end] for span in divide(text, text_ends, window)]
            for text, text_ends in zip(texts, ends, strict=True)
        ]
        return passages, time.perf_counter() - started
    finally:
        await provider.aclose()


def embedded_texts(records: Sequence[str], passages: Sequence[Sequence[str]]) -> list[str]:
    """What the service embeds for ``records``: each record's own text, then its passages
    (the order of one job's provider call)."""
    return [
        text for record, parts in zip(records, passages, strict=True) for text in (record, *parts)
    ]


# --------------------------------------------------------------------------- one service


async def _sizes(service: harness.Service) -> dict[str, int]:
    """The passages and memories the embedded Postgres holds, and their bytes (superuser,
    so row-level security does not hide other rows: the data directory is the bench's)."""
    if service.pgdata is None:
        return {}
    connection = await asyncpg.connect(db_waits.embedded_url(service.pgdata))
    try:
        row = await connection.fetchrow(SIZES_SQL)
    finally:
        await connection.close()
    return {key: int(value) for key, value in dict(row or {}).items()}


def _stores(tally: store.Tally, wall: float) -> dict[str, Any]:
    """Store latency and outcomes of one phase."""
    stats = latency_stats(tally.latencies_s, wall)
    return {
        "count": stats.count,
        "p50_ms": stats.p50_ms,
        "p95_ms": stats.p95_ms,
        "p99_ms": stats.p99_ms,
        "wall_s": stats.wall_s,
        "outcomes": dict(tally.outcomes),
        "hit_time_limit": tally.timed_out,
    }


async def measure_service(
    service: harness.Service,
    records: Sequence[str],
    single: Sequence[str],
    clients: int,
    max_seconds: float,
) -> dict[str, Any]:
    """Warm up, import ``records`` with ``clients`` sessions and time the drain, read the
    sizes, then time ``single`` stores of one client (their backlog is left behind)."""
    agents = [f"long-{n}" for n in range(clients)]
    async with mcp_sessions(service.mcp_url, service.key, clients) as sessions:
        warm = [f"Warm-up note {n}: the long-record run starts." for n in range(clients)]
        await store.store_phase(sessions, agents, "warmup", warm, max_seconds)
        await wait_queue_empty(sessions[0], max_seconds, DRAIN_POLL_S)
        before = cpu_snapshot(service)
        tally, wall = await store.store_phase(sessions, agents, "import", records, max_seconds)
        drain = wall + await wait_queue_empty(sessions[0], max_seconds, DRAIN_POLL_S)
        after = cpu_snapshot(service)
        sizes = await _sizes(service)
        one, one_wall = await store.store_phase(
            sessions[:1], agents[:1], "single", single, max_seconds
        )
    return {
        "import": _stores(tally, wall),
        "drain_s": round(drain, 2),
        "drain_cpu": cpu_usage(before, after, len(records)),
        "single": _stores(one, one_wall),
        "sizes": sizes,
    }


def run_mode(
    mode: str, records: Sequence[str], single: Sequence[str], args: argparse.Namespace
) -> dict[str, Any]:
    """One fresh service (new data directory) with passages ``mode`` (on/off)."""
    print(f"passages {mode}: starting the service ...", flush=True, file=sys.stderr)
    options = harness.ServiceOptions(extra_env=MODES[mode])
    with harness.running_service(options) as service:
        work = measure_service(service, records, single, args.clients, args.max_seconds)
        return {"mode": mode, **asyncio.run(work)}


# --------------------------------------------------------------------------- the report


def drain_rate(texts: int, seconds: float) -> float | None:
    """Texts embedded per second over the drain (None for no time)."""
    return round(texts / seconds, 1) if seconds > 0 else None


def summary_rows(results: dict[str, Any]) -> list[list[object]]:
    """One table row per mode: store latencies, passages, bytes, drain and its share of
    the bare model's best rate on the same texts."""
    ceiling = results["model_ceiling"]["best_texts_per_s"]
    records = results["options"]["records"]
    rows: list[list[object]] = []
    for run in results["runs"]:
        sizes = run["sizes"]
        passages = sizes.get("passages", 0)
        texts = records + passages
        rate = drain_rate(texts, run["drain_s"])
        divided = sizes.get("divided_records", 0)
        per_row = f"{sizes['passage_bytes'] / divided / 1024:.1f}" if divided else "—"
        rows.append(
            [
                run["mode"],
                f"{run['import']['p50_ms']:.1f} / {run['import']['p95_ms']:.1f}",
                f"{run['single']['p50_ms']:.1f} / {run['single']['p95_ms']:.1f}",
                f"{passages:,}",
                per_row,
                f"{run['drain_s']:.1f}",
                f"{texts:,}",
                "—" if rate is None else f"{rate:.1f}",
                "—" if rate is None else f"{100 * rate / ceiling:.0f} %",
            ]
        )
    return rows


CPU_PARTS = ("server", "postgres", "client", "other", "steal")


def cpu_rows(results: dict[str, Any]) -> list[list[object]]:
    """One row per mode: the cores each part kept busy on average from the first store
    until the backlog was empty, its CPU milliseconds per imported record, and the
    server's CPU milliseconds per text it embedded (to set beside the bare model's)."""
    rows: list[list[object]] = []
    records = results["options"]["records"]
    for run in results["runs"]:
        cells: list[object] = [run["mode"]]
        for part in CPU_PARTS:
            used = run["drain_cpu"].get(part)
            cells.append("—" if used is None else f"{used['cores']} ({used['ms_per_call']:,.0f})")
        texts = records + run["sizes"].get("passages", 0)
        server = run["drain_cpu"].get("server")
        cells.append("—" if server is None else f"{1000 * server['cpu_s'] / texts:.0f}")
        rows.append(cells)
    return rows


def markdown(results: dict[str, Any]) -> str:
    """The report: the machine line, the options, the table."""
    o = results["options"]
    c = results["model_ceiling"]
    clients = o["clients"]
    lines = [
        machine_line(results["machine"]),
        "",
        f"{o['records']:,} records of {o['mean_chars']:,} characters on average (at most"
        f" {o['chars']:,}), {o['expected_passages']:,} passages by the divider; {clients}"
        f" clients import them, then 1 client stores {o['single']} more. Bare model: best"
        f" {c['best_texts_per_s']} texts/s (batch {c['best']['batch']}, {c['best']['texts']}"
        " of the embedded texts, evenly sampled).",
        "",
        *table(
            [
                "passages",
                f"store p50 / p95 ms, {clients} clients",
                "store p50 / p95 ms, 1 client",
                "passages built",
                "KiB of passages per long record",
                "drain s",
                "texts embedded",
                "texts/s",
                "of the bare model",
            ],
            "lrrrrrrrr",
            summary_rows(results),
        ),
        "",
        "Cores busy from the first store until the backlog was empty (CPU ms per imported"
        f" record); cutting a record into passages took {o['divide_ms_per_record']} ms of it"
        " (the model's tokenizer and the divider, measured alone); the bare model took"
        f" {c['best'].get('cpu_ms_per_text', '—')} ms of CPU per text at its best batch:",
        "",
        *table(
            ["passages", *CPU_PARTS, "server CPU ms per embedded text"],
            "lrrrrrr",
            cpu_rows(results),
        ),
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m bench.throughput.long_records")
    add = parser.add_argument
    add("--records", type=int, default=1000, help="long records imported (default %(default)s)")
    add("--chars", type=int, default=16_000, help="most characters a record (default %(default)s)")
    add("--clients", type=int, default=8, help="MCP sessions importing (default %(default)s)")
    add("--single", type=int, default=20, help="records one client stores after (default 20)")
    add("--ceiling-texts", type=int, default=256, help="embedded texts the bare model reads")
    add("--ceiling-batches", default="16,32", help="bare model batch sizes (default 16,32)")
    add("--max-seconds", type=float, default=3600.0, help="limit of each phase and drain")
    add("--modes", default="on,off", help="passages modes, in order (default on,off)")
    add("--data", type=Path, default=locomo.DEFAULT_DATA, help="LoCoMo locomo10.json")
    add("--out", type=Path, default=DEFAULT_OUT, help="JSON result file (default %(default)s)")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 64 or args.records < 1 or args.single < 1:
        parser.error("--clients takes 1 to 64; --records and --single at least 1")
    if any(mode not in MODES for mode in args.modes.split(",")):
        parser.error(f"--modes takes {', '.join(MODES)}")
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The texts, the bare model on them, then each mode's service; JSON-ready results."""
    started = time.perf_counter()
    texts = long_texts(corpus_turns(args.data), args.records + args.single, args.chars)
    records, single = texts[: args.records], texts[args.records :]
    passages, divide_s = asyncio.run(_divided(records))
    embedded = embedded_texts(records, passages)
    results: dict[str, Any] = {
        "machine": machine_facts(),
        "options": {
            "records": args.records,
            "chars": args.chars,
            "mean_chars": round(sum(map(len, records)) / len(records)),
            "expected_passages": len(embedded) - len(records),
            "divide_ms_per_record": round(1000 * divide_s / len(records), 1),
            "clients": args.clients,
            "single": args.single,
            "modes": args.modes,
        },
    }
    print(f"bare model on {args.ceiling_texts} of {len(embedded)} texts ...", file=sys.stderr)
    batches = [int(size) for size in args.ceiling_batches.split(",")]
    sample = evenly(embedded, args.ceiling_texts)
    results["model_ceiling"] = model_ceiling(sample, batches)
    results["runs"] = [run_mode(mode, records, single, args) for mode in args.modes.split(",")]
    record_end(results, started)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point."""
    args = parse_args(argv)
    with contextlib.suppress(BrokenPipeError):
        results = run_or_exit(lambda: run(args))
        write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
