"""The embedded Postgres gets ``shared_buffers`` sized to the machine, or as set.

Postgres's default of 128 MB stops holding recall's HNSW indexes at about 100,000
memories (docs/benchmarks/passages.md, "At 100k, mostly the embedded server's 128 MB of
shared buffers"), so the service writes the size into the data directory before every
start (service/db/embedded.py). Checked on real servers: the test session's own (``auto``)
and one started by ``db url`` with the setting, then restarted with another value.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
import pytest

from service.db.embedded import SETTINGS_FILE, auto_shared_buffers, shared_buffers_value
from tests.support import run_cli, stop_embedded_postmaster

GIB = 1024**3


def test_auto_is_an_eighth_of_the_memory_between_128mb_and_8gb() -> None:
    assert auto_shared_buffers(24 * GIB) == "3072MB"
    assert auto_shared_buffers(23 * GIB + 500 * 1024**2) == "3006MB"  # whole megabytes, down
    assert auto_shared_buffers(512 * 1024**2) == "128MB"  # never below Postgres's default
    assert auto_shared_buffers(256 * GIB) == "8192MB"
    assert shared_buffers_value("640MB") == "640MB"


async def _shared_buffers_bytes(url: str) -> tuple[int, int]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            "SELECT setting::bigint * 8192 AS now,"
            " pg_size_bytes($1) AS wanted FROM pg_settings WHERE name = 'shared_buffers'",
            shared_buffers_value("auto"),
        )
        assert row is not None
        return int(row["now"]), int(row["wanted"])
    finally:
        await conn.close()


@pytest.mark.skipif(
    bool(os.environ.get("CPERSONA_TEST_DATABASE_URL")), reason="an external server is not ours"
)
def test_the_test_sessions_embedded_server_runs_with_the_auto_size(admin_url: str) -> None:
    now, wanted = asyncio.run(_shared_buffers_bytes(admin_url))
    assert now == wanted


def _db_url(data_dir: Path, shared_buffers: str) -> str:
    env = {"CPERSONA_DATA_DIR": str(data_dir), "CPERSONA_EMBEDDED_SHARED_BUFFERS": shared_buffers}
    result = run_cli(None, "db", "url", env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


async def _show(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return str(await conn.fetchval("SHOW shared_buffers"))
    finally:
        await conn.close()


def test_the_setting_sizes_the_first_start_and_the_next_start_after_a_change(
    tmp_path: Path,
) -> None:
    url = _db_url(tmp_path, "48MB")
    try:
        assert asyncio.run(_show(url)) == "48MB"  # the first start, right after initdb
    finally:
        stop_embedded_postmaster(tmp_path)
    url = _db_url(tmp_path, "64MB")
    try:
        assert asyncio.run(_show(url)) == "64MB"
    finally:
        stop_embedded_postmaster(tmp_path)
    config = (tmp_path / "pgdata" / "postgresql.conf").read_text()
    assert config.count(SETTINGS_FILE) == 1  # included once, however many starts


def test_a_size_the_machine_cannot_give_stops_the_start_in_one_line(tmp_path: Path) -> None:
    env = {"CPERSONA_DATA_DIR": str(tmp_path), "CPERSONA_EMBEDDED_SHARED_BUFFERS": "900GB"}
    result = run_cli(None, "db", "url", env=env, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()  # Postgres's reason, what to look at
    assert line.startswith("cpersona-service: embedded Postgres did not start: "), line
    assert "shared memory" in line, line
    assert line.endswith(
        f"(its log: {tmp_path / 'pgdata' / 'log'}; shared_buffers 900GB,"
        " CPERSONA_EMBEDDED_SHARED_BUFFERS)"
    ), line
