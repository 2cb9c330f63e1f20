"""Shared pure helpers of bench/: statistics, Markdown pieces, result parsing, CLI options."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import mcp_types as types
import pytest

from bench.harness import cli, client, machine, markdown, serving as harness, stats
from bench.throughput import store as store_throughput

MACHINE = {
    "cpu_model": "Test CPU",
    "nproc": 2,
    "memory_gib": 3.8,
    "python": "3.11.7",
    "git_commit": "abc123",
    "date_utc": "2026-12-01T10:00:00+00:00",
    "load_average_at_start": [0.5, 0.4, 0.3],
    "load_average_at_end": [0.6, 0.5, 0.4],
}


def test_percentile_interpolates_and_handles_nothing() -> None:
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 100) == 4.0
    assert stats.percentile([7.0], 95) == 7.0
    assert math.isnan(stats.percentile([], 50))


def test_latency_stats_are_milliseconds_and_calls_per_second() -> None:
    got = stats.latency_stats([0.010, 0.020, 0.030], wall_s=0.5)
    assert got.count == 3
    assert got.throughput_per_s == 6.0
    assert (got.mean_ms, got.p50_ms, got.min_ms, got.max_ms) == (20.0, 20.0, 10.0, 30.0)
    empty = stats.latency_stats([], wall_s=0.0)
    assert empty.count == 0
    assert math.isnan(empty.mean_ms)
    assert math.isnan(empty.throughput_per_s)


def test_machine_line_with_and_without_python() -> None:
    line = markdown.machine_line(MACHINE)
    assert line == (
        "Machine: Test CPU, 2 cores, 3.8 GiB, commit abc123, 2026-12-01T10:00:00+00:00,"
        " load [0.5, 0.4, 0.3] → [0.6, 0.5, 0.4]"
    )
    assert markdown.machine_line(MACHINE, python=True).startswith(
        "Machine: Test CPU, 2 cores, 3.8 GiB, Python 3.11.7, commit abc123,"
    )


def test_pct_and_outcomes() -> None:
    assert markdown.pct(0.6234) == "62.3%"
    assert markdown.pct(None) == "n/a"
    assert markdown.outcomes({"stored": 3, "error": 1}) == "error 1, stored 3"


def test_table_aligns_columns_and_renders_cells() -> None:
    assert markdown.table(["Name", "n"], "lr", [["a", 1], ["b", 2.5]]) == [
        "| Name | n |",
        "|---|--:|",
        "| a | 1 |",
        "| b | 2.5 |",
    ]
    assert markdown.table(["only"], "l", []) == ["| only |", "|---|"]
    with pytest.raises(ValueError, match="does not fit"):
        markdown.table(["a", "b"], "l", [])
    with pytest.raises(ValueError, match="does not fit"):
        markdown.table(["a"], "c", [])


def _result(*texts: str, error: bool = False) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=t) for t in texts]
    return types.CallToolResult(content=content, is_error=error)


def test_reply_of_parses_the_json_body() -> None:
    reply = client.reply_of(_result('{"result": "stored", "id": 7}'), 0.25)
    assert (reply.body, reply.seconds, reply.failed) == ({"result": "stored", "id": 7}, 0.25, False)
    assert client.reply_of(_result('{"a": ', '"b"}'), 0.0).body == {"a": "b"}  # joined texts


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (_result(), "no text content"),
        (_result("oops"), "oops"),
        (_result("[1, 2]"), "not an object"),
        (_result('{"error": "boom"}'), "boom"),
        (_result('{"ok": true}', error=True), None),
    ],
)
def test_reply_of_marks_failures(result: types.CallToolResult, error: str | None) -> None:
    reply = client.reply_of(result, 0.0)
    assert reply.failed
    assert reply.body.get("error") == error


def test_store_outcome_of_a_result() -> None:
    assert store_throughput.outcome_of(_result('{"result": "stored"}')) == ("stored", 20)
    embedded = '{"result": "stored", "embedded": true}'
    assert store_throughput.outcome_of(_result(embedded)) == ("stored+embedded", len(embedded))
    assert store_throughput.outcome_of(_result('{"items": []}')) == ("ok", 13)
    assert store_throughput.outcome_of(_result('{"error": "x"}')) == ("error", 14)
    assert store_throughput.outcome_of(_result("{}", error=True)) == ("error", 0)
    assert store_throughput.outcome_of(_result()) == ("error", 0)


def test_env_pair() -> None:
    assert cli.env_pair("CPERSONA_RRF_K=10") == ("CPERSONA_RRF_K", "10")
    assert cli.env_pair("A=b=c") == ("A", "b=c")
    assert cli.env_pair("EMPTY=") == ("EMPTY", "")
    for bad in ("novalue", "=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.env_pair(bad)


def test_write_results_writes_json_and_markdown(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "run.json"
    cli.write_results(out, {"n": 1, "text": "é"}, "| a |\n")
    assert json.loads(out.read_text()) == {"n": 1, "text": "é"}
    assert out.with_suffix(".md").read_text() == "| a |\n"
    assert not list(out.parent.glob("*.tmp"))


def test_run_or_exit_turns_failures_into_one_line() -> None:
    assert cli.run_or_exit(lambda: 3) == 3

    def broken() -> None:
        raise harness.BenchError("serve exited")

    with pytest.raises(SystemExit, match="bench: serve exited"):
        cli.run_or_exit(broken)


SHA = "0123456789abcdef0123456789abcdef01234567"


def test_git_commit_of_a_repository_a_worktree_and_a_detached_head(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git = repo / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(SHA + "\n")
    assert machine.git_commit(repo) == SHA[:12]
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs\n{SHA} refs/heads/main\n")
    assert machine.git_commit(repo) == SHA[:12]
    linked = git / "worktrees" / "wt"
    linked.mkdir(parents=True)
    (linked / "HEAD").write_text("ref: refs/heads/main\n")
    (linked / "commondir").write_text("../..\n")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {linked}\n")
    assert machine.git_commit(checkout) == SHA[:12]
    (linked / "HEAD").write_text("fedcba9876543210fedcba9876543210fedcba98\n")
    assert machine.git_commit(checkout) == "fedcba987654"
    assert machine.git_commit(tmp_path / "nowhere") is None
