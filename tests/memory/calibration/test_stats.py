"""The pure statistics of calibration (docs/tools.md, "calibrate_threshold") and the
argument/precision rules.

Hand-computed cases pin the semantics; where numpy is installed (the local extra) the
same numbers are checked against CPersona's numpy formulation on random data.
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

import pytest

from service.config import Settings
from service.memory.calibration import params, precision, stats

SETTINGS = Settings(embedding_mode="none")


def _numpy() -> Any:
    return pytest.importorskip("numpy")


def test_quantile_interpolates_linearly() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert stats.quantile(values, 0.5) == 2.0
    assert stats.quantile(values, 0.95) == pytest.approx(3.8)
    assert stats.quantile(values, 1.0) == 4.0
    assert stats.quantile([7.0], 0.3) == 7.0
    with pytest.raises(ValueError, match="empty"):
        stats.quantile([], 0.5)


def test_mean_std_and_admit_share() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    centre = stats.mean(values)
    assert centre == 2.5
    assert stats.std(values, centre) == pytest.approx(math.sqrt(1.25))
    assert stats.share_at_least(values, 3.0) == 0.5  # 3 and 4 are admitted (>=)
    assert stats.share_at_least(values, 4.5) == 0.0
    assert stats.share_at_least(values, 0.0) == 1.0


def test_linspace_ends_exactly_at_both_bounds() -> None:
    grid = stats.linspace(0.1, 0.9, 256)
    assert len(grid) == 256
    assert (grid[0], grid[-1]) == (0.1, 0.9)
    assert grid[1] - grid[0] == pytest.approx(0.8 / 255)


def test_separation_finds_the_gap_between_two_clean_populations() -> None:
    null = sorted(0.1 + 0.01 * i for i in range(20))  # 0.10 .. 0.29
    positives = sorted(0.7 + 0.01 * i for i in range(10))  # 0.70 .. 0.79
    threshold, youden = stats.separation(null, positives, floor=0.05)
    assert 0.29 < threshold <= 0.70
    assert youden == 1.0


def test_separation_floor_and_degenerate_range() -> None:
    assert stats.separation([0.01, 0.02], [0.03, 0.04], floor=0.5)[0] == 0.5
    assert stats.separation([0.4, 0.4], [0.4], floor=0.05) == (0.4, 0.0)
    assert stats.separation([0.01], [0.01], floor=0.05) == (0.05, 0.0)


def test_a_higher_beta_never_lowers_the_threshold() -> None:
    rng = random.Random(7)
    null = sorted(rng.gauss(0.2, 0.1) for _ in range(400))
    positives = sorted(rng.gauss(0.45, 0.12) for _ in range(60))
    thresholds = [stats.separation(null, positives, 0.0, beta)[0] for beta in (0.5, 1, 2)]
    assert thresholds == sorted(thresholds)
    assert thresholds[0] < thresholds[2]


def test_separation_matches_cpersonas_numpy_formulation() -> None:
    np = _numpy()
    rng = random.Random(11)
    for beta in (0.5, 1.0, 2.0, 3.3):
        null = sorted(rng.gauss(0.25, 0.08) for _ in range(500))
        positives = sorted(rng.gauss(0.5, 0.1) for _ in range(40))
        n, p = np.asarray(null), np.asarray(positives)
        lo, hi = min(n.min(), p.min()), max(n.max(), p.max())
        candidates = np.linspace(lo, hi, 256)
        tpr = (p[None, :] >= candidates[:, None]).mean(axis=1)
        fpr = (n[None, :] >= candidates[:, None]).mean(axis=1)
        best = int(np.argmax(tpr + beta * (1.0 - fpr)))
        expected = (max(float(candidates[best]), 0.05), float(tpr[best] - fpr[best]))
        assert stats.separation(null, positives, 0.05, beta) == pytest.approx(expected)


def test_threshold_methods_match_numpy_on_random_similarities() -> None:
    np = _numpy()
    rng = random.Random(3)
    null = sorted(rng.gauss(0.3, 0.1) for _ in range(1000))
    arr = np.asarray(null)
    percentile = stats.threshold_from_sims(
        null, method="percentile", z_factor=1.0, percentile=0.9, floor=0.05
    )
    assert percentile.threshold == round(float(np.quantile(arr, 0.9)), 4)
    assert percentile.median == round(float(np.median(arr)), 4)
    assert percentile.p95 == round(float(np.quantile(arr, 0.95)), 4)
    assert percentile.std == round(float(np.std(arr)), 4)
    assert percentile.null_admit_rate == round(float((arr >= percentile.threshold).mean()), 4)
    zscore = stats.threshold_from_sims(
        null, method="zscore", z_factor=1.5, percentile=0.95, floor=0.05
    )
    assert zscore.threshold == round(float(arr.mean() + 1.5 * arr.std()), 4)
    assert zscore.youden_j is None
    assert zscore.pos_mean is None


def test_separation_report_carries_positive_statistics() -> None:
    null = sorted([0.1, 0.12, 0.15, 0.2, 0.22, 0.25, 0.3, 0.31, 0.33, 0.35])
    positives = sorted([0.6, 0.62, 0.7, 0.75, 0.8])
    report = stats.threshold_from_sims(
        null,
        method="separation",
        z_factor=1.0,
        percentile=0.95,
        floor=0.05,
        positives=positives,
    )
    assert 0.35 < report.threshold <= 0.6
    assert (report.null_admit_rate, report.pos_admit_rate, report.youden_j) == (0.0, 1.0, 1.0)
    assert report.pos_mean == round(sum(positives) / 5, 4)
    with pytest.raises(ValueError, match="positives"):
        stats.threshold_from_sims(
            null, method="separation", z_factor=1.0, percentile=0.95, floor=0.05
        )


def test_a_floor_lifts_a_low_threshold_and_rounding_is_four_places() -> None:
    null = sorted(x / 1000 for x in range(-50, 20))
    report = stats.threshold_from_sims(
        null, method="percentile", z_factor=1.0, percentile=0.5, floor=0.05
    )
    assert report.threshold == 0.05
    assert report.null_admit_rate == 0.0
    odd = stats.threshold_from_sims(
        [0.123456, 0.2, 0.3], method="percentile", z_factor=1, percentile=1.0, floor=0.0
    )
    assert odd.threshold == 0.3
    assert odd.mean == round((0.123456 + 0.5) / 3, 4)


def test_gate_draw_needs_ten_null_and_five_positive_scores() -> None:
    null, positives = [0.01 * i for i in range(10)], [0.5, 0.6, 0.7, 0.8, 0.9]
    assert (
        stats.gate_draw(null[:9], positives, signal="rsf", beta=1, floor=0.05, queries_run=3)
        is None
    )
    assert (
        stats.gate_draw(null, positives[:4], signal="rsf", beta=1, floor=0.05, queries_run=3)
        is None
    )
    draw = stats.gate_draw(null, positives, signal="rsf", beta=2.0, floor=0.05, queries_run=3)
    assert draw is not None
    assert draw.threshold_draws is None
    assert (draw.signal, draw.beta, draw.n_null, draw.n_pos) == ("rsf", 2.0, 10, 5)
    assert draw.queries_run == 3
    assert 0.09 < draw.threshold <= 0.5
    assert (draw.null_admit_rate, draw.pos_admit_rate) == (0.0, 1.0)


def _draw(threshold: float, n_pos: int) -> stats.FusedGate:
    return stats.FusedGate(
        threshold=threshold,
        signal="rsf",
        beta=1.0,
        youden_j=0.5,
        queries_run=3,
        n_null=10,
        n_pos=n_pos,
        null_admit_rate=0.0,
        pos_admit_rate=1.0,
        null_mean=0.1,
        pos_mean=0.7,
    )


def test_upper_median_keeps_one_coherent_draw() -> None:
    draws = [_draw(t, i) for i, t in enumerate([0.4, 0.15, 0.42, 0.41])]
    chosen = stats.upper_median(draws)
    assert chosen == dataclasses.replace(_draw(0.41, 3), threshold_draws=(0.15, 0.4, 0.41, 0.42))
    assert stats.upper_median([_draw(0.3, 0)]) == _draw(0.3, 0)
    assert stats.upper_median([]) is None


def test_calibrate_arguments_defaults_and_clamps() -> None:
    resolved = params.resolve(SETTINGS, params.CalibrationRequest(agent_id="a"))
    assert resolved == params.Params(
        sample_n=200, z_factor=1.0, method="separation", percentile=0.95
    )
    wild = params.CalibrationRequest(
        "a", sample_size=2**70, z_factor=-99.0, method="zscore", percentile=95
    )
    assert params.resolve(SETTINGS, wild) == params.Params(2000, -10.0, "zscore", 0.95)
    negative = params.CalibrationRequest("a", sample_size=-5, z_factor=math.inf)
    assert params.resolve(SETTINGS, negative) == params.Params(1, 10.0, "separation", 0.95)


def test_calibrate_argument_refusals() -> None:
    message = "percentile must be in (0, 1] (or a percent 1-100), got 500.0"
    assert params.resolve(SETTINGS, params.CalibrationRequest("", percentile=500)) == message
    assert params.percentile_problem(500) == message
    assert params.percentile_problem(-0.5) == (
        "percentile must be in (0, 1] (or a percent 1-100), got -0.5"
    )
    assert params.percentile_problem(0) is None
    assert params.percentile_problem(100) is None
    assert params.resolve(SETTINGS, params.CalibrationRequest("", method="z-score")) == (
        "Invalid method 'z-score'. Supported: percentile, separation, zscore"
    )


def test_precision_resolution() -> None:
    resolve = precision.resolve
    assert resolve(SETTINGS, "", 2.0) == precision.PrecisionChange(2.0, 2.0, "strict")
    assert resolve(SETTINGS, "strict", 0.7) == precision.PrecisionChange(0.7, 0.7, "custom")
    assert resolve(SETTINGS, "LeNiEnT", 0) == precision.PrecisionChange(0.5, 0.5, "lenient")
    cleared = resolve(SETTINGS, "", -1)
    assert cleared == precision.PrecisionChange(None, 1.0, "default")
    assert cleared.cleared
    assert resolve(SETTINGS, "bogus", 0) == (
        "Unknown precision 'bogus'; expected strict / balanced / lenient"
    )
    assert precision.problem("", "strict", 0) == "agent_id is required"
    assert precision.problem("a", "bogus", 1.5) is None  # a positive beta wins
    assert precision.problem("a", "bogus", 0) == resolve(SETTINGS, "bogus", 0)


def test_global_beta_follows_the_settings() -> None:
    assert precision.global_beta(SETTINGS) == 1.0
    assert precision.global_beta(Settings(embedding_mode="none", recall_precision="strict")) == 2
    custom = Settings(embedding_mode="none", recall_precision="strict", fused_gate_beta=1.7)
    assert precision.global_beta(custom) == 1.7
    assert [precision.label(b) for b in (2.0, 1.0, 0.5, 1.7)] == [
        "strict",
        "balanced",
        "lenient",
        "custom",
    ]
