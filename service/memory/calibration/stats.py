"""The statistics of calibration (docs/tools.md, "calibrate_threshold"), pure and standard-library
only.

A *null* distribution holds similarities (or gate scores) of pairs that are mostly
unrelated; a *positive* distribution those of a label-free proxy for related pairs
(rows of one session, or nearest neighbours). A threshold is placed where a real match
stands out from the null: a quantile of it (``percentile``), ``mean + z*std``
(``zscore``), or the point that best separates the two populations (``separation``).

The numbers match numpy's: ``quantile`` is numpy's default linear interpolation,
``std`` the population deviation, the separation sweep uses numpy's ``linspace`` grid
and ``argmax`` tie rule (first best). Inputs are sorted ascending once, so every
"share at or above t" is a bisection, not a scan: a 2,000-row sample has two million
pairs. Every reported number is rounded to 4 decimal places.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

Method: TypeAlias = Literal["separation", "percentile", "zscore"]
METHODS: Final[tuple[Method, ...]] = ("separation", "percentile", "zscore")
CANDIDATES: Final = 256
"""Evenly spaced thresholds the separation sweep evaluates."""


def quantile(ascending: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of sorted values, linearly interpolated like numpy."""
    if not ascending:
        raise ValueError("quantile of an empty sample")
    position = (len(ascending) - 1) * min(1.0, max(0.0, q))
    low = math.floor(position)
    high = min(low + 1, len(ascending) - 1)
    return ascending[low] + (position - low) * (ascending[high] - ascending[low])


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def std(values: Sequence[float], centre: float) -> float:
    """Population standard deviation around ``centre`` (numpy's ``std``)."""
    return math.sqrt(math.fsum((x - centre) ** 2 for x in values) / len(values))


def share_at_least(ascending: Sequence[float], threshold: float) -> float:
    """The fraction of sorted values ``>= threshold`` (an admit rate)."""
    return (len(ascending) - bisect_left(ascending, threshold)) / len(ascending)


def linspace(low: float, high: float, count: int) -> list[float]:
    """``count`` evenly spaced values from ``low`` to exactly ``high`` (numpy's grid)."""
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count - 1)] + [high]


def separation(
    null: Sequence[float], positives: Sequence[float], floor: float, beta: float = 1.0
) -> tuple[float, float]:
    """The threshold that best separates sorted ``positives`` from the sorted ``null``.

    Sweeps 256 candidates spanning both populations and takes the first maximum of
    ``TPR + beta * (1 - FPR)`` (TPR = positives admitted, FPR = null admitted). ``beta``
    is the precision point: 1 is Youden's J, above 1 favours rejecting the null (strict),
    below 1 admitting positives (lenient). Returns ``(max(threshold, floor), youden_j)``
    where ``youden_j`` is the plain ``TPR - FPR`` at the chosen point, whatever ``beta``.
    """
    low, high = min(null[0], positives[0]), max(null[-1], positives[-1])
    if high <= low:
        return max(low, floor), 0.0
    best, best_value, best_j = low, -math.inf, 0.0
    for candidate in linspace(low, high, CANDIDATES):
        tpr = share_at_least(positives, candidate)
        fpr = share_at_least(null, candidate)
        value = tpr + beta * (1.0 - fpr)
        if value > best_value:
            best, best_value, best_j = candidate, value, tpr - fpr
    return max(best, floor), best_j


@dataclass(frozen=True, slots=True)
class ThresholdStats:
    """A vector threshold and the distribution it came from, as reported (4 dp)."""

    threshold: float
    mean: float
    std: float
    median: float
    p95: float
    null_admit_rate: float
    youden_j: float | None = None
    pos_mean: float | None = None
    pos_admit_rate: float | None = None


def threshold_from_sims(
    null: Sequence[float],
    *,
    method: Method,
    z_factor: float,
    percentile: float,
    floor: float,
    positives: Sequence[float] | None = None,
) -> ThresholdStats:
    """The vector threshold of ``method`` over the sorted null similarities.

    ``separation`` needs the sorted ``positives`` and sits at beta 1 (the vector
    threshold has no precision knob). The result is floored, rounded to 4 dp, and its
    ``null_admit_rate`` (and ``pos_admit_rate``) measured at the rounded value, which is
    the one recall applies.
    """
    centre = mean(null)
    spread = std(null, centre)
    youden: float | None = None
    if method == "zscore":
        raw = centre + z_factor * spread
    elif method == "separation":
        if not positives:
            raise ValueError("the separation method needs positives")
        raw, youden = separation(null, positives, floor)
    else:
        raw = quantile(null, percentile)
    threshold = round(max(raw, floor), 4)
    return ThresholdStats(
        threshold=threshold,
        mean=round(centre, 4),
        std=round(spread, 4),
        median=round(quantile(null, 0.5), 4),
        p95=round(quantile(null, 0.95), 4),
        null_admit_rate=round(share_at_least(null, threshold), 4),
        youden_j=None if youden is None else round(youden, 4),
        pos_mean=round(mean(positives), 4) if positives else None,
        pos_admit_rate=round(share_at_least(positives, threshold), 4) if positives else None,
    )


MIN_GATE_NULL: Final = 10
MIN_GATE_POSITIVES: Final = 5


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FusedGate:
    """One simulated draw of an agent's fused gate (the upper median of several when
    ``threshold_draws`` holds every draw's threshold, ascending; None for a single draw).
    Rates and means are rounded to 4 decimal places."""

    threshold: float
    signal: str
    beta: float
    youden_j: float
    queries_run: int
    n_null: int
    n_pos: int
    null_admit_rate: float
    pos_admit_rate: float
    null_mean: float
    pos_mean: float
    threshold_draws: tuple[float, ...] | None = None


def gate_draw(
    null: Sequence[float],
    positives: Sequence[float],
    *,
    signal: str,
    beta: float,
    floor: float,
    queries_run: int,
) -> FusedGate | None:
    """One simulated draw of the fused gate, or None with too little data.

    Needs at least 10 null and 5 positive gate scores; separates them at the agent's
    ``beta``.
    """
    if len(null) < MIN_GATE_NULL or len(positives) < MIN_GATE_POSITIVES:
        return None
    null, positives = sorted(null), sorted(positives)
    raw, youden = separation(null, positives, floor, beta)
    threshold = round(raw, 4)
    return FusedGate(
        threshold=threshold,
        signal=signal,
        beta=beta,
        youden_j=round(youden, 4),
        queries_run=queries_run,
        n_null=len(null),
        n_pos=len(positives),
        null_admit_rate=round(share_at_least(null, threshold), 4),
        pos_admit_rate=round(share_at_least(positives, threshold), 4),
        null_mean=round(mean(null), 4),
        pos_mean=round(mean(positives), 4),
    )


def upper_median(draws: Sequence[FusedGate]) -> FusedGate | None:
    """The draw holding the upper-median threshold, with every draw's threshold attached.

    One coherent measurement is reported rather than an average of incompatible runs; a
    median of several independent draws cannot land on a minor mode of the separation
    objective that fewer than half of them chose. None without any draw.
    """
    if not draws:
        return None
    ordered = sorted(draws, key=lambda draw: draw.threshold)
    chosen = ordered[len(ordered) // 2]
    if len(ordered) > 1:
        return dataclasses.replace(
            chosen, threshold_draws=tuple(draw.threshold for draw in ordered)
        )
    return chosen
