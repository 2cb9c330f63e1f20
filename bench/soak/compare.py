"""The abusive soak's report: the well-behaved tenants with and without the abusive key,
and what the abuser got (pure functions of the two runs' results).

The target (issue #36): the well-behaved tenants' p50 and p95, per tool and over all
tools, within ``TARGET_RATIO`` (2x) of the same run without the abuser; 0 real errors
(anything but a deliberate 429/503 refusal); the memory of ``serve`` flat
(:func:`bench.soak.report.rss_trend`).
"""

from __future__ import annotations

import collections
from typing import Any

from bench.harness.markdown import machine_line, table
from bench.harness.stats import latency_stats
from bench.soak.abuse import BEHAVIOURS
from bench.soak.calls import Tally

TARGET_RATIO = 2.0
QUANTILES = ("p50_ms", "p95_ms")
CPU_PARTS = ("serve", "postgres", "well-behaved clients", "abuser")


def ratio(clean: float, abusive: float) -> float | None:
    """``abusive / clean`` rounded to two decimals (None when ``clean`` is not positive)."""
    return round(abusive / clean, 2) if clean > 0 else None


def latency_rows(clean: dict[str, Any], abusive: dict[str, Any]) -> list[dict[str, Any]]:
    """Per tool served in both runs (and over all tools): p50/p95 of each and their ratios."""
    rows = []
    for tool, before in clean.items():
        after = abusive.get(tool)
        if after is None:
            continue
        row: dict[str, Any] = {"tool": tool}
        for q in QUANTILES:
            row[f"clean_{q}"], row[f"abusive_{q}"] = before[q], after[q]
            row[f"{q[:3]}_ratio"] = ratio(before[q], after[q])
        rows.append(row)
    return rows


def verdict(rows: list[dict[str, Any]], abusive: dict[str, Any]) -> dict[str, Any]:
    """The three targets, each met or not, with the numbers they were judged on."""
    ratios = [r[f"{q[:3]}_ratio"] for r in rows for q in QUANTILES]
    known = [r for r in ratios if r is not None]
    worst = max(known) if known else None
    return {
        "worst_ratio": worst,
        "latency_met": worst is not None and worst <= TARGET_RATIO,
        "real_errors": abusive["real_errors"],
        "errors_met": abusive["real_errors"] == 0,
        "memory_flat": bool(abusive.get("rss", {}).get("flat")),
    }


def abuser_summary(tally: Tally) -> dict[str, Any]:
    """Per behaviour: its calls, their kinds, and the latency of those served."""
    wall = tally.ended - tally.started
    by: dict[str, Any] = {}
    for behaviour in BEHAVIOURS:
        mine = [o for o in tally.outcomes if o.tool == behaviour]
        if not mine:
            continue
        served = [o.seconds for o in mine if o.served]
        stats = latency_stats(served, wall)
        by[behaviour] = {
            "calls": len(mine),
            "kinds": dict(sorted(collections.Counter(o.kind for o in mine).items())),
            "served_p50_ms": stats.p50_ms if served else None,
            "served_p95_ms": stats.p95_ms if served else None,
        }
    return by


def combine(clean: dict[str, Any], abusive: dict[str, Any]) -> dict[str, Any]:
    """Both runs and their comparison, as one result."""
    rows = latency_rows(clean["per_tool"], abusive["per_tool"])
    return {"clean": clean, "abusive": abusive, "latency": rows, "verdict": verdict(rows, abusive)}


def _cell(value: object) -> str:
    return "n/a" if value is None else f"{value}"


def _side_rows(clean: dict[str, Any], abusive: dict[str, Any]) -> list[tuple[object, ...]]:
    def rss(side: dict[str, Any], key: str) -> object:
        return side.get("rss", {}).get(key)

    facts = [
        ("served per s", clean["throughput_per_s"], abusive["throughput_per_s"]),
        ("deliberate refusals", clean["deliberate_refusals"], abusive["deliberate_refusals"]),
        ("real errors", clean["real_errors"], abusive["real_errors"]),
        (
            "RSS first minute after warm-up, MiB",
            *(rss(s, "first_minute_mib") for s in (clean, abusive)),
        ),
        ("RSS last minute, MiB", *(rss(s, "last_minute_mib") for s in (clean, abusive))),
        (
            "RSS slope, second half, MiB/min",
            *(rss(s, "second_half_slope_mib_per_min") for s in (clean, abusive)),
        ),
        (
            "service error lines / tracebacks",
            *(
                f"{s['logged']['error_lines']} / {s['logged']['tracebacks']}"
                for s in (clean, abusive)
            ),
        ),
        *(
            (
                f"CPU seconds: {name}",
                *(s.get("cpu_seconds", {}).get(name) for s in (clean, abusive)),
            )
            for name in CPU_PARTS
        ),
    ]
    return [(name, _cell(a), _cell(b)) for name, a, b in facts]


def abuser_table(abuser: dict[str, Any]) -> list[str]:
    """The abuser's answers per behaviour, as Markdown lines."""
    rows = [
        (
            behaviour,
            row["calls"],
            ", ".join(f"{kind} {n}" for kind, n in row["kinds"].items()),
            _cell(row["served_p50_ms"]),
        )
        for behaviour, row in abuser.items()
    ]
    return table(["Abusive behaviour", "Calls", "Answers", "Served p50 ms"], "lrlr", rows)


def compare_tables(results: dict[str, Any]) -> str:
    """The comparison's Markdown: the ratio table, the side facts, the verdict, the abuser."""
    clean, abusive, v = results["clean"], results["abusive"], results["verdict"]
    s = results["settings"]
    lines = [
        "## Soak with one abusive key, against the same soak without it",
        "",
        f"Clean run: {machine_line(clean['machine'], python=True)}",
        "",
        f"Abusive run: {machine_line(abusive['machine'], python=True)}",
        "",
        f"`{s['clients']}` well-behaved clients over `{s['tenants']}` tenants for "
        f"`{s['seconds']:g}` s each run; the abuser: {abusive['abuse_workers']}.",
        "",
    ]
    rows = [
        (
            r["tool"],
            r["clean_p50_ms"],
            r["abusive_p50_ms"],
            f"{_cell(r['p50_ratio'])}x",
            r["clean_p95_ms"],
            r["abusive_p95_ms"],
            f"{_cell(r['p95_ratio'])}x",
        )
        for r in results["latency"]
    ]
    columns = ["Tool", "p50 clean", "p50 abusive", "ratio", "p95 clean", "p95 abusive", "ratio"]
    lines += table(columns, "lrrrrrr", rows)
    lines += [
        "",
        *table(["Well-behaved tenants", "clean", "abusive"], "lrr", _side_rows(clean, abusive)),
    ]
    met = {True: "met", False: "**missed**"}
    lines += [
        "",
        f"Target: ratio ≤ {TARGET_RATIO:g}x ({met[v['latency_met']]}: worst "
        f"{_cell(v['worst_ratio'])}x), 0 real errors ({met[v['errors_met']]}: "
        f"{v['real_errors']}), memory flat ({met[v['memory_flat']]}).",
        "",
        *abuser_table(abusive["abuser"]),
        "",
    ]
    return "\n".join(lines)
