"""Pure parts of the abusive soak (bench.soak.abuse, bench.soak.compare, the RSS trend)."""

from __future__ import annotations

import json

import pytest

from bench.soak.abuse import (
    CONTEXT_TURNS,
    QUERY_CAP,
    classify_reply,
    large_bodies,
    long_text,
    parse_workers,
    rpc_body,
    status_of_head,
)
from bench.soak.calls import Outcome, Tally
from bench.soak.compare import abuser_summary, combine, compare_tables, latency_rows, ratio
from bench.soak.report import rss_trend

MAX_REQUEST_BYTES = 4 * 2**20  # CPERSONA_MAX_REQUEST_BYTES' default (docs/reliability.md)


def _tool_reply(body: object, is_error: bool = False) -> dict[str, object]:
    content = [{"type": "text", "text": json.dumps(body)}]
    return {"jsonrpc": "2.0", "id": 1, "result": {"content": content, "isError": is_error}}


def test_workers_per_behaviour_are_parsed_and_unnamed_ones_are_off() -> None:
    assert parse_workers("large=4, flood=48") == {"large": 4, "flood": 48, "bogus": 0, "stall": 0}
    for bad in ("huge=3", "large", "large=x", "large=0", ""):
        with pytest.raises(ValueError, match=r"BEHAVIOUR=COUNT|at least one"):
            parse_workers(bad)


def test_plain_http_answers_are_classified_like_the_sdk_clients_answers() -> None:
    limited = {"jsonrpc": "2.0", "id": None, "error": {"code": -32029, "message": "x"}}
    limited["error"]["data"] = {"reason": "key_concurrency", "retry_after": 1}  # type: ignore[index]
    assert classify_reply(429, limited) == "refused 429 key_concurrency"
    busy = {"error": {"code": -32003, "data": {"reason": "overloaded"}}}
    assert classify_reply(503, busy) == "refused 503 overloaded"
    assert classify_reply(429, {"error": "slow down", "reason": "auth_failures"}) == (
        "refused 429 auth_failures"
    )
    assert classify_reply(503, None) == "refused 503 ?"
    assert classify_reply(401, {"error": "unauthorized"}) == "unauthorized"
    assert classify_reply(500, None) == "http 500"
    assert classify_reply(200, {"error": {"code": -32602, "message": "bad"}}) == "rpc_error -32602"
    assert classify_reply(200, _tool_reply({"messages": []})) == "ok"
    assert classify_reply(200, _tool_reply({"ok": False, "error": "x"})) == "tool_failed"
    assert classify_reply(200, _tool_reply({"ok": True}, is_error=True)) == "tool_error"
    assert classify_reply(200, {"result": {"content": "not a list"}}) == "tool_error"


def test_an_answer_is_read_from_json_or_from_its_event_stream() -> None:
    event = 'event: message\r\ndata: {"jsonrpc": "2.0", "id": 1, "result": {}}\r\n\r\n'
    assert rpc_body("text/event-stream", event) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert rpc_body("application/json", '{"error": "unauthorized"}') == {"error": "unauthorized"}
    assert rpc_body("application/json", "Internal Server Error") is None
    assert rpc_body("application/json", "[1]") is None
    assert status_of_head(b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\n\r\n") == 429
    assert status_of_head(b"garbage") == 0


def test_the_large_calls_sit_at_the_caps_and_fit_the_body_limit() -> None:
    assert len(long_text(1)) == QUERY_CAP
    assert long_text(1) == long_text(1) != long_text(2)
    recall, with_context = (json.loads(body) for body in large_bodies("abuser", seed=3))
    assert len(recall["params"]["arguments"]["query"]) == QUERY_CAP
    turns = with_context["params"]["arguments"]["external_context"]
    assert len(turns) == CONTEXT_TURNS
    assert {len(turn["content"]) for turn in turns} == {QUERY_CAP}
    assert len(large_bodies("abuser", seed=3)[1]) < MAX_REQUEST_BYTES


def test_memory_that_steps_to_a_plateau_is_flat_and_a_steady_climb_is_not() -> None:
    plateau = [(t, 300.0 if t < 40 else 500.0 if t < 90 else 520.0) for t in range(0, 600, 5)]
    trend = rss_trend([(float(t), m) for t, m in plateau], warmup_s=30)
    assert trend["flat"] is True
    assert trend["second_half_slope_mib_per_min"] == 0.0
    assert (trend["first_minute_mib"], trend["last_minute_mib"]) == (
        466.7,
        520.0,
    )  # 2 samples of 300, 10 of 500
    leak = [(float(t), 300.0 + t / 10) for t in range(0, 600, 5)]  # 6 MiB per minute
    trend = rss_trend(leak, warmup_s=30)
    assert trend["flat"] is False
    assert trend["slope_mib_per_min"] == pytest.approx(6.0)
    assert rss_trend([(0.0, 1.0)], warmup_s=30)["flat"] is False  # too short to judge
    assert rss_trend([], warmup_s=30) == {}


def _side(p50: float, p95: float, errors: int = 0, flat: bool = True) -> dict[str, object]:
    stats = {"p50_ms": p50, "p95_ms": p95}
    return {
        "machine": {
            "cpu_model": "cpu",
            "nproc": 2,
            "memory_gib": 1,
            "python": "3.11",
            "git_commit": "abc",
            "date_utc": "today",
            "load_average_at_start": [1.0],
        },
        "per_tool": {"recall": stats, "all tools": stats},
        "throughput_per_s": 10.0,
        "deliberate_refusals": 3,
        "real_errors": errors,
        "rss": {"flat": flat, "second_half_slope_mib_per_min": 0.1},
        "logged": {"error_lines": 0, "tracebacks": 0},
        "abuse_workers": "large=4",
        "abuser": {},
    }


def test_the_comparison_takes_ratios_and_judges_the_three_targets() -> None:
    assert ratio(100.0, 250.0) == 2.5
    assert ratio(0.0, 5.0) is None
    rows = latency_rows({"recall": {"p50_ms": 10.0, "p95_ms": 20.0}}, {})
    assert rows == []  # a tool served in one run only has nothing to compare
    within = combine(_side(100.0, 200.0), _side(150.0, 390.0))
    assert within["verdict"] == {
        "worst_ratio": 1.95,
        "latency_met": True,
        "real_errors": 0,
        "errors_met": True,
        "memory_flat": True,
    }
    missed = combine(_side(100.0, 200.0), _side(90.0, 500.0, errors=2, flat=False))
    assert missed["verdict"]["worst_ratio"] == 2.5
    assert missed["verdict"]["latency_met"] is False
    assert missed["verdict"]["errors_met"] is False
    text = compare_tables({"settings": {"clients": 5, "tenants": 1, "seconds": 60.0}, **missed})
    assert "| recall | 100.0 | 90.0 | 0.9x | 200.0 | 500.0 | 2.5x |" in text
    assert "ratio ≤ 2x (**missed**: worst 2.5x), 0 real errors (**missed**: 2)" in text


def test_the_abusers_answers_are_tallied_per_behaviour() -> None:
    tally = Tally(started=0.0, ended=10.0)
    tally.outcomes = [
        Outcome("flood", "refused 429 key_concurrency", 0.001, 1.0),
        Outcome("flood", "ok", 0.2, 2.0),
        Outcome("flood", "ok", 0.4, 3.0),
        Outcome("bogus", "unauthorized", 0.01, 1.0),
    ]
    summary = abuser_summary(tally)
    assert list(summary) == ["flood", "bogus"]
    assert summary["flood"]["kinds"] == {"ok": 2, "refused 429 key_concurrency": 1}
    assert summary["flood"]["served_p50_ms"] == pytest.approx(300.0)
    assert summary["bogus"] == {
        "calls": 1,
        "kinds": {"unauthorized": 1},
        "served_p50_ms": None,
        "served_p95_ms": None,
    }
