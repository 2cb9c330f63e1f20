"""The store/list suite's results as Markdown tables (pure functions of the JSON)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from bench.harness.markdown import machine_line, outcomes, table
from bench.throughput.db_waits import grouped


def _cores(cpu: dict[str, Any], name: str) -> str:
    """Average cores busy for ``name`` in a phase."""
    entry = cpu.get(name)
    return "n/a" if entry is None else f"{entry['cores']:.2f}"


def _per_call(cpu: dict[str, Any], name: str) -> str:
    """CPU milliseconds per call for ``name`` in a phase."""
    entry = cpu.get(name)
    return "n/a" if entry is None else f"{entry['ms_per_call']:.2f}"


def _rate(phase: dict[str, Any]) -> str:
    """Median throughput, with the range when there were several repetitions."""
    text = f"{phase['latency']['throughput_per_s']:.1f}"
    if phase.get("repetitions", 1) > 1:
        low, high = phase["throughput_range_per_s"]
        text += f" ({low:.0f} to {high:.0f})"
    return text


def _calls(phase: dict[str, Any]) -> str:
    """Calls per repetition, times the repetitions."""
    count = f"{phase['latency']['count']:.0f}"
    reps = phase.get("repetitions", 1)
    return count if reps == 1 else f"{count} x {reps}"


def _ms(latency: dict[str, Any], *names: str) -> list[str]:
    """Latency fields in milliseconds, one decimal."""
    return [f"{latency[name]:.1f}" for name in names]


def store_table(stores: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows for the store configurations."""
    columns = [
        *("Text", "Clients", "Calls", "Stores/s", "Mean ms", "p50 ms", "p95 ms", "p99 ms"),
        *("Max ms", "Outcomes"),
    ]
    rows = [
        [
            f"{r['size']} (~{r['mean_content_chars']} chars)",
            r["clients"],
            _calls(r),
            _rate(r),
            *_ms(r["latency"], "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"),
            outcomes(r["outcomes"]),
        ]
        for r in stores
    ]
    return table(columns, "l" + "r" * 8 + "l", rows)


def backlog_table(stores: Sequence[dict[str, Any]], ceiling: dict[str, Any] | None) -> list[str]:
    """Markdown rows: how long until the last stored row was embedded, and at what rate
    (against the bare model's best batch throughput when it was measured)."""
    best = None if ceiling is None else float(ceiling["best_texts_per_s"])
    columns = ["Text", "Clients", "Rows", "Last vector after s", "After last ack s"]
    columns += ["Embedded/s", "Of the bare model"]
    rows = []
    for r in stores:
        backlog = r.get("backlog")
        if backlog is None:
            continue
        rate = backlog["embedded_per_s"]
        share = "n/a" if best is None or rate is None else f"{100 * rate / best:.0f} %"
        rows.append(
            [
                r["size"],
                r["clients"],
                backlog["stored"],
                f"{backlog['drained_s']:.2f}",
                f"{backlog['after_last_ack_s']:.2f}",
                "n/a" if rate is None else f"{rate:.1f}",
                share,
            ]
        )
    return table(columns, "l" + "r" * 6, rows)


def waits_table(stores: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows: what the Postgres backends did during each store phase, on average
    (:mod:`bench.throughput.db_waits`), and how many commits each WAL flush carried."""
    columns = ["Text", "Clients", "Running", "Waiting for WAL", "Other waits"]
    columns += ["In a transaction, waiting for the service", "Idle", "Commits/flush"]
    columns += ["ms/flush"]
    rows = []
    for r in stores:
        waits = r.get("db_waits")
        if waits is None:
            continue
        groups = grouped(waits["backends"])
        flush = waits["ms_per_flush"]
        rows.append(
            [
                r["size"],
                r["clients"],
                *(f"{groups[g]:.2f}" for g in ("running", "wal", "other waits", "round trip")),
                f"{groups['idle']:.2f}",
                "n/a" if waits["commits_per_flush"] is None else waits["commits_per_flush"],
                "n/a" if flush is None else f"{flush:.2f}",
            ]
        )
    caption = (
        "Postgres backends on average during the measured stores and their drain"
        " (bench.throughput.db_waits):"
    )
    return [caption, "", *table(columns, "l" + "r" * 8, rows)]


def ceiling_lines(ceiling: dict[str, Any]) -> list[str]:
    """The bare model's texts per second per batch size."""
    columns = ["Bare model, batch", "Texts", "Texts/s"]
    rows = [[r["batch"], r["texts"], f"{r['texts_per_s']:.1f}"] for r in ceiling["rates"]]
    return table(columns, "rrr", rows)


def cpu_table(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows: where the CPU went, in cores busy and milliseconds per call."""
    columns = [
        *("Phase", "Server cores", "Postgres cores", "Bench client cores", "Other cores"),
        *("Steal cores", "Server ms/call", "Postgres ms/call", "Client ms/call"),
    ]
    rows = [
        [
            r["name"],
            *(_cores(r["cpu"], n) for n in ("server", "postgres", "client", "other", "steal")),
            *(_per_call(r["cpu"], n) for n in ("server", "postgres", "client")),
        ]
        for r in entries
    ]
    return table(columns, "l" + "r" * 8, rows)


def list_table(lists: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown rows for list_memories."""
    columns = [
        *("list_memories", "Calls", "Calls/s", "Mean ms", "p50 ms", "p95 ms", "p99 ms"),
        "Response KB",
    ]
    rows = [
        [
            r["name"],
            _calls(r),
            _rate(r),
            *_ms(r["latency"], "mean_ms", "p50_ms", "p95_ms", "p99_ms"),
            f"{r['mean_response_bytes'] / 1024:.1f}",
        ]
        for r in lists
    ]
    return table(columns, "l" + "r" * 7, rows)


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def start_table(starts: dict[str, Any]) -> list[str]:
    """Markdown rows for cold and warm starts (median, min, max over the runs)."""
    columns = [
        *("Start", "Runs", "Spawn → /readyz 200 (median)", "min", "max"),
        *("Spawn → `serving` log (median)", "SIGTERM → exit (median)"),
    ]
    rows = []
    for kind in ("cold", "warm"):
        runs = [r for r in starts["runs"] if r["kind"] == kind]
        if not runs:
            continue
        ready = [r["ready_s"] for r in runs]
        serving = [r["serving_log_s"] for r in runs if r["serving_log_s"] is not None]
        rows.append(
            [
                kind,
                len(runs),
                *map(_seconds, (statistics.median(ready), min(ready), max(ready))),
                _seconds(statistics.median(serving)) if serving else "n/a",
                _seconds(statistics.median(r["stop_s"] for r in runs)),
            ]
        )
    cli = f"\n`python -m service --help` (interpreter + imports): {starts['cli_help_s']} s"
    return [*table(columns, "l" + "r" * 6, rows), cli]


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    m = results["machine"]
    lines = [
        f"{machine_line(m, python=True)}, {m['busy_cores_before_start']} cores busy before start",
        "",
        f"Latency figures are medians over {results['options']['repeat']} pass(es); the CPU"
        " split is that of the median-throughput pass.",
        "",
        *store_table(results["store"]),
        "",
        *list_table(results["list_memories"]),
        "",
        *cpu_table([*results["store"], *results["list_memories"]]),
    ]
    if any(r.get("db_waits") for r in results["store"]):
        lines += ["", *waits_table(results["store"])]
    if any("backlog" in r for r in results["store"]):
        ceiling = results.get("model_ceiling")
        lines += ["", *backlog_table(results["store"], ceiling)]
        if ceiling is not None:
            lines += ["", *ceiling_lines(ceiling)]
    if "starts" in results:
        lines += ["", *start_table(results["starts"])]
    return "\n".join(lines) + "\n"
