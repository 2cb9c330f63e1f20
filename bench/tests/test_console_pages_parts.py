"""The parts of ``bench.console.pages``: sizes, the queries of a round, the report, and the
seed (against the test's real Postgres)."""

from __future__ import annotations

import argparse
import asyncio

import asyncpg
import pytest

from bench.console import pages

MACHINE = {
    "cpu_model": "Test CPU",
    "nproc": 2,
    "memory_gib": 3.8,
    "git_commit": "abc123",
    "date_utc": "2026-12-01T10:00:00+00:00",
    "load_average_at_start": [0.5, 0.4, 0.3],
    "load_average_at_end": [0.6, 0.5, 0.4],
}


def test_sizes_read_as_counts_and_too_small_a_size_is_refused() -> None:
    assert pages.parse_size("10k") == 10_000
    assert pages.parse_size("100K") == 100_000
    assert pages.parse_size("1m") == 1_000_000
    assert pages.parse_size("5000") == 5_000
    for bad in ("ten", "1k0", "100"):
        with pytest.raises(argparse.ArgumentTypeError):
            pages.parse_size(bad)


def _stats(p95: float) -> dict[str, float]:
    return {"p50_ms": p95 / 2, "p95_ms": p95, "max_ms": p95 * 1.5, "count": 60}


def test_the_report_judges_each_page_against_its_sizes_target() -> None:
    names = [
        "agents",
        "search",
        "search + days (time cue)",
        "recall through MCP",
        "recall + time cue through MCP",
    ]
    timed = dict(zip(names, [40.0, 95.0, 150.0, 80.0, 140.0], strict=True))
    results = {
        "machine": MACHINE,
        "size": 10_000,
        "command": "python -m bench.console.pages --size 10k",
        "pages": {name: _stats(p95) for name, p95 in timed.items()},
    }
    report = pages.markdown(results)
    assert "| agents | 20.0 | 40.0 | 60.0 | yes |" in report
    assert "| search + days (time cue) | 75.0 | 150.0 | 225.0 | **no** |" in report
    assert "+15.0 ms (target: at most +20 ms)" in report
    assert "same time cue: +10.0 ms" in report
    assert "python -m bench.console.pages --size 10k" in report


def test_each_search_and_recall_of_a_round_has_its_own_query() -> None:
    queries = [f"q{n}" for n in range(3 * pages.QUERIES_PER_ROUND)]
    seen: list[str] = []

    class Recorder:
        async def page(self, path: str, params: dict[str, str]) -> str:
            if "q" in params:
                seen.append(params["q"])
            return ""

        async def recall(self, query: str, time_cue: dict[str, str] | None = None) -> None:
            seen.append(query)

    timed = pages.requests(Recorder(), queries, {}, "mem:1")  # type: ignore[arg-type]
    for n in range(3):
        for request in timed.values():
            asyncio.run(request(n))  # type: ignore[arg-type]
    assert sorted(seen) == sorted(queries)


async def test_the_seed_spreads_the_agents_rows_over_projects_in_the_copy_itself(
    direct_database_url: str,
) -> None:
    """The bench's agent reaches its projects through the bulk load's COPY, not through an
    UPDATE of every row afterwards (at 100k that UPDATE re-inserted every row into every
    index, HNSW included, and the load did not finish in 330 s): the rows cycle through
    the two projects and the global pool."""
    size = pages.MIN_SIZE + 2
    report = await pages.seed(direct_database_url, size)
    assert report.rows == size
    conn = await asyncpg.connect(direct_database_url)
    try:
        counts = await conn.fetch(
            "SELECT m.project_id, count(*) AS n FROM memories m JOIN agents a "
            "ON a.id = m.agent_id WHERE a.name = $1 GROUP BY m.project_id",
            pages.AGENT,
        )
    finally:
        await conn.close()
    third = size // 3
    assert {row["project_id"]: row["n"] for row in counts} == {
        "atlas": third + 1,
        "borealis": third,
        "": third,
    }
