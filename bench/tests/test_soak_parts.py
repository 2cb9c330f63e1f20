"""Pure parts of the soak (bench.soak.run): answer kinds, the tool mix, the summary."""

from __future__ import annotations

import json
import math

import mcp_types as types
from mcp.shared.exceptions import MCPError

from bench.soak.calls import ClientState, Outcome, Tally, classify_error, classify_result
from bench.soak.report import summary, tables


def _result(body: object, is_error: bool = False) -> types.CallToolResult:
    text = types.TextContent(type="text", text=json.dumps(body))
    return types.CallToolResult(content=[text], is_error=is_error)


def test_refusals_with_their_codes_are_deliberate_and_everything_else_is_an_error() -> None:
    overloaded = MCPError(-32003, "busy", {"reason": "overloaded", "retry_after": 1})
    limited = MCPError(-32029, "slow down", {"reason": "rate_limited", "retry_after": 1})
    assert classify_error(overloaded) == "refused 503 overloaded"
    assert classify_error(limited) == "refused 429 rate_limited"
    assert classify_error(MCPError(-32603, "internal")) == "rpc_error -32603"
    assert classify_error(TimeoutError()) == "transport TimeoutError"
    assert classify_result(_result({"ok": True, "result": "stored"}))[0] == "ok"
    assert classify_result(_result({"error": "internal error"}))[0] == "tool_failed"
    assert classify_result(_result({"ok": False, "error": "x"}))[0] == "tool_failed"
    assert classify_result(_result({"ok": True}, is_error=True))[0] == "tool_error"


def test_a_client_stores_before_it_can_recall_or_fetch() -> None:
    state = ClientState(3)
    assert {state.pick_tool() for _ in range(200)} <= {"store", "list_memories", "archive_episode"}
    state.remember("Kemal moved the launch", "mem:1")
    assert "recall" in {state.pick_tool() for _ in range(200)}


def test_the_summary_separates_served_refused_and_errors_and_times_the_heal() -> None:
    tally = Tally(started=0.0, ended=60.0, killed_at=10.0)
    tally.outcomes = [
        Outcome("store", "ok", 0.1, 5.0),
        Outcome("store", "refused 503 database_unavailable", 0.01, 10.5),
        Outcome("recall", "ok", 1.0, 11.0),  # sent before the first refusal: not healed yet
        Outcome("recall", "ok", 0.2, 13.0),
        Outcome("list_memories", "tool_failed", 0.1, 70.0),
    ]
    tally.rss_mib = [(0.0, 100.0), (30.0, 110.0), (60.0, 112.0)]
    result = summary(tally, warmup_s=30)
    assert (result["served"], result["deliberate_refusals"], result["real_errors"]) == (3, 1, 1)
    assert result["time_to_heal_seconds"] == 3.0
    assert result["rss"]["growth_after_warmup_mib"] == 2.0
    assert result["per_minute"][0] == {"minute": 1, "served": 3, "refused": 1}
    assert math.isclose(result["throughput_per_s"], 0.1)
    report = {
        **result,
        "settings": {"clients": 2, "tenants": 1, "seconds": 60.0},
        "machine": {
            "cpu_model": "cpu",
            "nproc": 2,
            "memory_gib": 1,
            "python": "3.11",
            "git_commit": "abc",
            "date_utc": "today",
            "load_average_at_start": [0],
        },
        "logged": {"error_lines": 0, "tracebacks": 0, "log_lines": 5},
    }
    text = tables(report)
    assert "**1 real errors**" in text
    assert "Time to heal after kill -9 of Postgres: 3.0 s." in text
