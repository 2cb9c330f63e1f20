"""The pure parts of the per-phase breakdown (bench/latency/phases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.latency import breakdown, instrument
from bench.latency.phases import (
    OUTSIDE,
    TOTAL,
    Call,
    Interval,
    attribute,
    call_phases,
    pair_calls,
    summarise,
)

EDGE = "edge (host check, guard, log)"
SDK = "SDK request handling"
LIB = "library (other Python)"


def test_nested_intervals_give_each_instant_to_the_innermost_phase() -> None:
    spans = [Interval(EDGE, 0.0, 10.0), Interval(SDK, 1.0, 9.0), Interval("sql", 2.0, 5.0)]
    assert attribute(spans) == pytest.approx({EDGE: 2.0, SDK: 5.0, "sql": 3.0})


def test_concurrent_leaves_share_the_overlap_and_the_sum_is_the_covered_time() -> None:
    spans = [
        Interval(LIB, 0.0, 10.0),
        Interval("embedding", 1.0, 5.0),
        Interval("sql", 3.0, 7.0),
        Interval("sql", 4.0, 6.0),  # a second round trip of the same phase: counted once
    ]
    got = attribute(spans)
    assert got == pytest.approx({LIB: 4.0, "embedding": 3.0, "sql": 3.0})
    assert sum(got.values()) == pytest.approx(10.0)


def test_an_unknown_phase_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown phase"):
        attribute([Interval("sqll", 0.0, 1.0)])


def test_outside_is_the_client_latency_minus_the_server_time_never_negative() -> None:
    assert call_phases(Call(0.012, [Interval(EDGE, 0.0, 0.010)], 0))[OUTSIDE] == pytest.approx(
        0.002
    )
    assert call_phases(Call(0.008, [Interval(EDGE, 0.0, 0.010)], 0))[OUTSIDE] == 0.0


def test_summary_means_add_up_to_the_total_and_missing_phases_count_zero() -> None:
    calls = [
        Call(0.010, [Interval(EDGE, 0.0, 0.004), Interval("sql", 0.001, 0.003)], 1),
        Call(0.020, [Interval(EDGE, 0.0, 0.008)], 0),
    ]
    rows = {row.phase: row for row in summarise(calls)}
    assert rows[TOTAL].mean_ms == pytest.approx(15.0)
    assert rows["sql"].mean_ms == pytest.approx(1.0)
    assert rows["sql"].p50_ms == pytest.approx(1.0)  # (0 + 2) / 2
    parts = sum(r.mean_ms for name, r in rows.items() if name != TOTAL)
    assert parts == pytest.approx(rows[TOTAL].mean_ms)


def test_records_pair_with_the_last_calls_of_their_tool_in_order() -> None:
    records: list[dict[str, object]] = [
        {"tool": None, "intervals": [[EDGE, 0.0, 1.0]]},
        {"tool": "recall", "intervals": [[EDGE, 0.0, 1.0]]},  # warm-up
        {"tool": "store", "intervals": [[EDGE, 0.0, 1.0]]},
        {"tool": "recall", "intervals": [[EDGE, 0.0, 2.0], ["sql", 0.5, 1.0]]},
        {"tool": "recall", "intervals": [[EDGE, 0.0, 3.0]]},
    ]
    calls = pair_calls([2.5, 3.5], records, "recall")
    assert [c.client_s for c in calls] == [2.5, 3.5]
    assert [c.sql_round_trips for c in calls] == [1, 0]
    assert calls[1].intervals == [Interval(EDGE, 0.0, 3.0)]
    with pytest.raises(ValueError, match="3 server records of recall for 4 calls"):
        pair_calls([1.0] * 4, records, "recall")


def _run(p50: float, p95: float, per_s: float, failed: int = 0) -> dict[str, object]:
    latency = {"p50_ms": p50, "p95_ms": p95, "throughput_per_s": per_s}
    return {"latency": latency, "failures": {"x": failed} if failed else {}}


def test_versus_rows_pair_the_service_and_cpersona_per_size() -> None:
    from bench.latency.versus import versus_rows

    side = {"recall_1": _run(10.0, 20.0, 90.0), "recall_8": _run(0, 0, 40.0)}
    mine = {**side, "store_8": _run(0, 0, 50.0)}
    theirs = {**side, "store_8": _run(0, 0, 15.0, failed=2)}
    rows = versus_rows({"sizes": [{"tier": "1k", "service": mine, "cpersona": theirs}]})
    assert rows == [
        ["1k", "service", "10.0", "20.0", "40.0", "50.0", 0],
        ["1k", "CPersona 2.6.14", "10.0", "20.0", "40.0", "15.0", 2],
    ]


def test_cpersona_is_served_over_http_with_a_token_and_the_http_embedder(tmp_path: Path) -> None:
    from bench.harness.cpersona import TOKEN, cpersona_env

    env = cpersona_env(tmp_path, 8123, "http://127.0.0.1:9/embed")
    assert env["CPERSONA_TRANSPORT"] == "streamable-http"
    assert env["CPERSONA_HTTP_PORT"] == "8123"
    assert env["CPERSONA_AUTH_TOKEN"] == TOKEN
    assert env["CPERSONA_EMBEDDING_MODE"] == "http"
    assert env["CPERSONA_EMBEDDING_URL"].endswith("/embed")
    assert env["CPERSONA_DB_PATH"] == str(tmp_path / "cpersona.db")


def test_store_texts_are_all_new() -> None:
    from bench.latency.breakdown import store_texts
    from bench.latency.versus import new_texts

    assert len(set(store_texts(50, "1k"))) == 50
    assert len(set(new_texts(50, "1k"))) == 50


def test_a_statement_is_named_by_its_query_or_its_first_words() -> None:
    names = {"SELECT 1\nFROM t": "ping"}
    assert instrument.statement_label("SELECT 1\nFROM t", names) == "ping"
    assert instrument.statement_label("BEGIN;", names) == "BEGIN;"
    assert instrument.statement_label("-- The lexical half\nSELECT", names) == "-- The lexical"


def test_round_trips_are_listed_per_sequence_the_most_frequent_first() -> None:
    records = [
        {"tool": "store", "statements": ["old"]},
        {"tool": "store", "statements": ["BEGIN;", "store_memory", "COMMIT;"]},
        {"tool": "recall", "statements": ["BEGIN;"]},
        {"tool": "store", "statements": ["BEGIN;", "store_memory", "COMMIT;"]},
        {"tool": "store", "statements": ["BEGIN;", "COMMIT;"]},
    ]
    assert breakdown.usual_statements(records, "store", 3) == [
        {"calls": 2, "statements": ["BEGIN;", "store_memory", "COMMIT;"]},
        {"calls": 1, "statements": ["BEGIN;", "COMMIT;"]},
    ]
