"""The pure parts of the alternating store comparison: percentiles and the summary."""

from __future__ import annotations

from bench.throughput.store_compare import _p, _summary


def test_percentiles_are_read_from_the_sorted_calls_in_milliseconds() -> None:
    seconds = [0.004, 0.001, 0.003, 0.002]
    assert _p(seconds, 0.5) == 3.0
    assert _p(seconds, 0.95) == 4.0


def test_the_summary_gives_each_version_and_the_ratios() -> None:
    calls = {"this": [0.011, 0.012, 0.013], "compare": [0.010, 0.010, 0.012]}
    rounds = {"this": [12.0, 11.0, 13.0], "compare": [10.0, 10.0, 12.0]}
    summary = _summary(calls, rounds)
    assert summary["this"]["p50_ms"] == 12.0
    assert summary["compare"]["median_round_p50_ms"] == 10.0
    assert summary["ratio_p50"] == 1.2
    assert summary["ratio_median_round_p50"] == 1.2
