"""The soak's numbers and tables (pure functions of a :class:`~bench.soak.calls.Tally`)."""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import Any

from bench.harness.markdown import machine_line, table
from bench.harness.stats import latency_stats
from bench.soak.calls import MIX, Tally

FLAT_MIB_PER_MIN = 1.0
ALL_TOOLS = "all tools"


def _per_tool(tally: Tally, wall: float) -> dict[str, Any]:
    served = collections.defaultdict(list)
    for outcome in tally.outcomes:
        if outcome.served:
            served[outcome.tool].append(outcome.seconds)
    per_tool = {
        tool: dataclasses.asdict(latency_stats(served[tool], wall))
        for tool, _ in MIX
        if served[tool]
    }
    every = [seconds for samples in served.values() for seconds in samples]
    return {**per_tool, ALL_TOOLS: dataclasses.asdict(latency_stats(every, wall))} if every else {}


def _per_minute(tally: Tally) -> list[dict[str, Any]]:
    minutes: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for outcome in tally.outcomes:
        minute = int((outcome.ended - tally.started) // 60)
        minutes[minute][
            "served" if outcome.served else "refused" if outcome.deliberate else "error"
        ] += 1
    return [{"minute": m + 1, **minutes[m]} for m in sorted(minutes)]


def _slope(points: list[tuple[float, float]]) -> float | None:
    """The least-squares slope of ``(seconds, MiB)`` points, in MiB per minute."""
    if len(points) < 2:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_m = sum(m for _, m in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return 60 * sum((t - mean_t) * (m - mean_m) for t, m in points) / spread


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def rss_trend(samples: list[tuple[float, float]], warmup_s: float) -> dict[str, Any]:
    """Is the memory flat? The mean RSS of the first minute after warm-up and of the last
    minute, and the least-squares slope after warm-up and over the second half of the run
    (MiB per minute). Flat means a second-half slope of at most ``FLAT_MIB_PER_MIN``: the
    local model's arena grows in steps to a plateau early (``docs/benchmarks/soak.md``),
    while a leak keeps a slope to the end."""
    if not samples:
        return {}
    end = samples[-1][0]
    after = [(t, m) for t, m in samples if t >= warmup_s]
    half = [(t, m) for t, m in samples if t >= max(warmup_s, end / 2)]
    slope, half_slope = _slope(after), _slope(half)
    return {
        "first_minute_mib": _mean([m for t, m in after if t < warmup_s + 60]),
        "last_minute_mib": _mean([m for t, m in samples if t > end - 60]),
        "slope_mib_per_min": None if slope is None else round(slope, 2),
        "second_half_slope_mib_per_min": None if half_slope is None else round(half_slope, 2),
        "flat": half_slope is not None and half_slope <= FLAT_MIB_PER_MIN,
    }


def _rss(tally: Tally, warmup_s: float) -> dict[str, Any]:
    samples = tally.rss_mib
    if not samples:
        return {}
    after_warmup = next((mib for t, mib in samples if t >= warmup_s), samples[-1][1])
    return {
        "start_mib": round(samples[0][1], 1),
        "after_warmup_mib": round(after_warmup, 1),
        "end_mib": round(samples[-1][1], 1),
        "max_mib": round(max(mib for _, mib in samples), 1),
        "growth_after_warmup_mib": round(samples[-1][1] - after_warmup, 1),
        **rss_trend(samples, warmup_s),
        "samples": [(round(t, 1), round(mib, 1)) for t, mib in samples],
    }


def _heal(tally: Tally) -> float | None:
    """Seconds from the kill to the first call served after the first refusal that followed."""
    if tally.killed_at is None:
        return None
    refused = [o.ended for o in tally.outcomes if o.ended > tally.killed_at and not o.served]
    if not refused:
        return 0.0
    first_refused = min(refused)
    served = [o.ended for o in tally.outcomes if o.served and o.ended - o.seconds > first_refused]
    return round(min(served) - tally.killed_at, 2) if served else math.inf


def summary(tally: Tally, *, warmup_s: float) -> dict[str, Any]:
    """Throughput, latencies per tool, kinds of answer, RSS, time to heal."""
    wall = tally.ended - tally.started
    kinds = collections.Counter(outcome.kind for outcome in tally.outcomes)
    served = kinds.get("ok", 0)
    deliberate = sum(n for kind, n in kinds.items() if kind.startswith("refused "))
    return {
        "wall_seconds": round(wall, 1),
        "calls": len(tally.outcomes),
        "served": served,
        "throughput_per_s": round(served / wall, 1) if wall > 0 else None,
        "kinds": dict(sorted(kinds.items())),
        "deliberate_refusals": deliberate,
        "real_errors": len(tally.outcomes) - served - deliberate,
        "per_tool": _per_tool(tally, wall),
        "per_minute": _per_minute(tally),
        "rss": _rss(tally, warmup_s),
        "time_to_heal_seconds": _heal(tally),
        "cpu_seconds": tally.cpu_seconds,
    }


def tables(results: dict[str, Any]) -> str:
    """The soak's Markdown: a headline, latency per tool, answers by kind, RSS."""
    s = results["settings"]
    lines = [
        "## Soak",
        "",
        machine_line(results["machine"], python=True),
        "",
        f"`{s['clients']}` clients over `{s['tenants']}` tenants for `{s['seconds']:g}` s: "
        f"{results['calls']} calls, {results['served']} served "
        f"({results['throughput_per_s']}/s), {results['deliberate_refusals']} deliberate "
        f"refusals (429/503), **{results['real_errors']} real errors**.",
        "",
    ]
    rows = [
        (
            tool,
            st["count"],
            st["throughput_per_s"],
            st["p50_ms"],
            st["p95_ms"],
            st["p99_ms"],
            st["max_ms"],
        )
        for tool, st in results["per_tool"].items()
    ]
    lines += table(
        ["Tool", "Served", "Per s", "p50 ms", "p95 ms", "p99 ms", "Max ms"], "lrrrrrr", rows
    )
    lines += ["", *table(["Answer", "Count"], "lr", sorted(results["kinds"].items())), ""]
    rss = results["rss"]
    if rss:
        lines.append(
            f"RSS of `serve`: {rss['start_mib']} MiB at start, {rss['after_warmup_mib']} MiB "
            f"after warm-up, {rss['end_mib']} MiB at the end (max {rss['max_mib']}): "
            f"growth after warm-up {rss['growth_after_warmup_mib']} MiB; slope after warm-up "
            f"{rss['slope_mib_per_min']} MiB/min, over the second half "
            f"{rss['second_half_slope_mib_per_min']} MiB/min "
            f"({'flat' if rss['flat'] else 'growing'})."
        )
    logged = results["logged"]
    lines.append(
        f"The service logged {logged['error_lines']} error lines and "
        f"{logged['tracebacks']} tracebacks in {logged['log_lines']} lines."
    )
    if results["time_to_heal_seconds"] is not None:
        lines.append(
            f"Time to heal after kill -9 of Postgres: {results['time_to_heal_seconds']} s."
        )
    return "\n".join(lines) + "\n"
