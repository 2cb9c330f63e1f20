"""Pure parts of the store/list suite (bench.throughput.run): repetition summaries and
synthetic texts."""

from __future__ import annotations

from typing import Any

import pytest

from bench.corpora import texts
from bench.throughput import run, summary as run_summary


def _phase(rate: float, p50: float, outcomes: dict[str, int], name: str = "p") -> dict[str, Any]:
    return {
        "name": name,
        "latency": {"throughput_per_s": rate, "p50_ms": p50},
        "outcomes": outcomes,
        "cpu": {"rate": rate},
    }


def test_summarise_phase_takes_medians_ranges_and_sums() -> None:
    phases = [
        _phase(10.0, 5.0, {"stored": 2}),
        _phase(30.0, 1.0, {"stored": 2, "error": 1}),
        _phase(20.0, 3.0, {"stored": 2}),
    ]
    summary = run_summary.summarise_phase(phases)
    assert summary["latency"] == {"throughput_per_s": 20.0, "p50_ms": 3.0}
    assert summary["throughput_range_per_s"] == [10.0, 30.0]
    assert summary["repetitions"] == 3
    assert summary["outcomes"] == {"stored": 6, "error": 1}
    assert summary["cpu"] == {"rate": 20.0}  # the CPU split of the median-throughput pass


def test_summarise_pairs_phases_across_repetitions() -> None:
    one = {"store": [_phase(1.0, 1.0, {}, "a"), _phase(2.0, 1.0, {}, "b")], "list_memories": []}
    two = {"store": [_phase(3.0, 1.0, {}, "a"), _phase(4.0, 1.0, {}, "b")], "list_memories": []}
    summary = run_summary.summarise([one, two])
    assert [p["name"] for p in summary["store"]] == ["a", "b"]
    assert [p["throughput_range_per_s"] for p in summary["store"]] == [[1.0, 3.0], [2.0, 4.0]]
    assert summary["list_memories"] == []


def test_text_source_never_repeats_and_is_reproducible() -> None:
    first = texts.TextSource(7).batch("short", 200)
    assert len(set(first)) == 200
    assert first == texts.TextSource(7).batch("short", 200)
    medium = texts.TextSource(7).batch("medium", 20)
    assert texts.mean_length(medium) > texts.mean_length(first)
    assert texts.mean_length([]) == 0.0


def test_workers_option_runs_the_service_with_that_many_workers() -> None:
    args = run.parse_args(["--workers", "2", "--env", "CPERSONA_EMBEDDING_MODE=none"])
    options = run.service_options(args)
    assert options.extra_env == {"CPERSONA_EMBEDDING_MODE": "none", "CPERSONA_WORKERS": "2"}
    assert "CPERSONA_WORKERS" not in run.service_options(run.parse_args([])).extra_env


def test_workers_option_refuses_a_count_out_of_range() -> None:
    with pytest.raises(SystemExit):
        run.parse_args(["--workers", "0"])


def test_database_waits_are_sampled_only_when_asked() -> None:
    """The sampler queries Postgres every few milliseconds: never in a plain run."""
    assert not any(plan.db_waits for plan in run.build_plans(run.parse_args([])))
    asked = run.build_plans(run.parse_args(["--db-waits", "--clients", "1,8"]))
    assert [plan.db_waits for plan in asked] == [True] * 4  # short and medium, 1 and 8 clients
