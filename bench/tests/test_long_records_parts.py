"""The pure parts of the long-record bench: the texts, the sample, the table."""

from __future__ import annotations

from typing import Any

import pytest

from bench.throughput.long_records import (
    cpu_rows,
    drain_rate,
    embedded_texts,
    evenly,
    long_texts,
    markdown,
    summary_rows,
)

TURNS = [f"Speaker {n % 2}: turn number {n} of the talk." for n in range(40)]


def test_long_texts_are_distinct_whole_turns_within_the_bound() -> None:
    texts = long_texts(TURNS, 10, 200)
    assert len(set(texts)) == 10
    for text in texts:
        assert len(text) <= 200
        assert set(text.split("\n")) <= set(TURNS)
        assert len(text) + len(TURNS[0]) + 1 > 200  # filled: one more turn would not fit
    assert texts[1].startswith(TURNS[4])  # record i starts at turn i * (40 // 10)


def test_a_text_running_past_the_last_turn_reads_the_corpus_round() -> None:
    last = long_texts(TURNS, 40, 200)[-1]
    assert last.split("\n")[:2] == [TURNS[-1], TURNS[0]]


def test_long_texts_refuses_what_it_cannot_build() -> None:
    with pytest.raises(ValueError, match="records"):
        long_texts(TURNS, 41, 200)
    with pytest.raises(ValueError, match="longest turn"):
        long_texts(TURNS, 2, 10)
    with pytest.raises(ValueError, match="identical"):
        long_texts(["same", "same"], 2, 10)


def test_evenly_spreads_the_sample_and_keeps_a_short_list_whole() -> None:
    items = [str(n) for n in range(10)]
    assert evenly(items, 5) == ["0", "2", "4", "6", "8"]
    assert evenly(items, 20) == items


def test_embedded_texts_are_each_record_then_its_passages() -> None:
    assert embedded_texts(["A", "B"], [["a1", "a2"], []]) == ["A", "a1", "a2", "B"]


def test_drain_rate_is_texts_per_second() -> None:
    assert drain_rate(300, 12.0) == 25.0
    assert drain_rate(3, 0.0) is None


def _results() -> dict[str, Any]:
    def run(mode: str, passages: int, divided: int, drain: float) -> dict[str, Any]:
        stores = {"p50_ms": 40.0, "p95_ms": 80.5}
        sizes = {"passages": passages, "divided_records": divided, "passage_bytes": 10 * 1024}
        cpu = {"server": {"cores": 1.5, "ms_per_call": 300.0, "cpu_s": 3.0}, "postgres": None}
        return {
            "mode": mode,
            "import": stores,
            "single": stores,
            "sizes": sizes,
            "drain_s": drain,
            "drain_cpu": cpu,
        }

    machine = {
        "cpu_model": "cpu",
        "nproc": 2,
        "memory_gib": 4.0,
        "git_commit": "abc",
        "date_utc": "today",
        "load_average_at_start": [1.0],
    }
    return {
        "machine": machine,
        "options": {
            "records": 10,
            "chars": 100,
            "mean_chars": 95,
            "expected_passages": 40,
            "divide_ms_per_record": 12.5,
            "clients": 8,
            "single": 2,
        },
        "model_ceiling": {
            "best_texts_per_s": 20.0,
            "best": {"batch": 32, "texts": 16, "cpu_ms_per_text": 90.0},
        },
        "runs": [run("on", 40, 10, 5.0), run("off", 0, 0, 1.0)],
    }


def test_the_rows_count_records_and_passages_against_the_bare_model() -> None:
    on, off = summary_rows(_results())
    assert on == ["on", "40.0 / 80.5", "40.0 / 80.5", "40", "1.0", "5.0", "50", "10.0", "50 %"]
    assert off[3:] == ["0", "—", "1.0", "10", "10.0", "50 %"]


def test_the_report_names_the_sizes_and_has_one_row_per_mode() -> None:
    report = markdown(_results())
    assert "10 records of 95 characters" in report
    assert "40 passages by the divider" in report
    assert report.count("\n| on |") == 2  # the summary and the CPU table
    assert report.count("\n| off |") == 2
    assert "90.0 ms of CPU per text" in report


def test_the_cpu_rows_give_cores_and_milliseconds_per_record() -> None:
    on, _ = cpu_rows(_results())
    assert on == ["on", "1.5 (300)", "—", "—", "—", "—", "60"]  # 3 s over 10 + 40 texts
