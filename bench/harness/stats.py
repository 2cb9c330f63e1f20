"""Statistics of samples: percentiles, latency summaries, distributions (pure functions)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of sorted samples, linear interpolation."""
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """Per-call latency in milliseconds and throughput in calls per second."""

    count: int
    wall_s: float
    throughput_per_s: float
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    min_ms: float
    max_ms: float


def latency_stats(samples_s: Sequence[float], wall_s: float) -> LatencyStats:
    """Summarise latencies (seconds) measured over ``wall_s`` seconds of wall time."""
    ordered = sorted(s * 1000.0 for s in samples_s)
    count = len(ordered)
    return LatencyStats(
        count=count,
        wall_s=round(wall_s, 3),
        throughput_per_s=round(count / wall_s, 1) if wall_s > 0 else math.nan,
        mean_ms=round(sum(ordered) / count, 2) if count else math.nan,
        p50_ms=round(percentile(ordered, 50), 2),
        p95_ms=round(percentile(ordered, 95), 2),
        p99_ms=round(percentile(ordered, 99), 2),
        min_ms=round(ordered[0], 2) if count else math.nan,
        max_ms=round(ordered[-1], 2) if count else math.nan,
    )


def describe(values: Sequence[float], digits: int = 1) -> dict[str, float]:
    """Count, mean, p5, p50, p95, min and max, rounded to ``digits``."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}
    stats = {
        "mean": sum(ordered) / len(ordered),
        "p5": percentile(ordered, 5),
        "p50": percentile(ordered, 50),
        "p95": percentile(ordered, 95),
        "min": ordered[0],
        "max": ordered[-1],
    }
    return {"count": len(ordered)} | {k: round(v, digits) for k, v in stats.items()}
