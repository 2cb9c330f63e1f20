"""The store/list suite over repetitions: each phase's medians and ranges (pure)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def _median_run(phases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The repetition of a phase with the median throughput (upper median)."""
    ordered = sorted(phases, key=lambda p: float(p["latency"]["throughput_per_s"]))
    return ordered[len(ordered) // 2]


def summarise_phase(phases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One phase over repetitions: median of every latency field, throughput range,
    summed outcomes, and the CPU split of the median-throughput repetition."""
    summary = dict(_median_run(phases))
    fields = phases[0]["latency"].keys()
    summary["latency"] = {f: statistics.median(p["latency"][f] for p in phases) for f in fields}
    rates = [p["latency"]["throughput_per_s"] for p in phases]
    summary["throughput_range_per_s"] = [min(rates), max(rates)]
    summary["repetitions"] = len(phases)
    outcomes: dict[str, int] = {}
    for phase in phases:
        for name, count in phase["outcomes"].items():
            outcomes[name] = outcomes.get(name, 0) + count
    summary["outcomes"] = outcomes
    return summary


def summarise(repetitions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per kind (store, list_memories), each phase summarised over the repetitions."""
    return {
        kind: [
            summarise_phase(list(phases))
            for phases in zip(*(r[kind] for r in repetitions), strict=True)
        ]
        for kind in ("store", "list_memories")
    }
