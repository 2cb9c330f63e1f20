"""What the database backends wait for while a benchmark phase runs.

CPU per call says what a call costs; it does not say why a phase stops short of the
machine's cores. This samples ``pg_stat_activity`` every few milliseconds during the
phase (the service's client backends only) and reads the WAL counters around it, so a
result says, on average, how many backends were running, waiting for the service to
send its next statement (``idle in transaction``: round trips), waiting for the WAL to
reach the disk (``LWLock:WALWrite``, ``IO:WalSync``: commits), or idle in the pool; and
how many write transactions each WAL flush carried and how long a flush took (``pg_stat_io``, the
flush time only when ``track_wal_io_timing`` is on, which the benchmark turns on for its
own embedded Postgres).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

SAMPLE_INTERVAL_S = 0.004
ACTIVITY = """
SELECT state, coalesce(wait_event_type || ':' || wait_event, '') AS waiting
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
  AND datname = current_database()
"""
COUNTERS = """
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_xid,
       coalesce(sum(fsyncs), 0)::bigint AS flushes,
       coalesce(sum(fsync_time), 0)::float8 AS flush_ms,
       current_setting('track_wal_io_timing')::bool AS timed
FROM pg_stat_io WHERE object = 'wal'
"""
SETTLE_S = 1.2
"""Cumulative statistics (``pg_stat_io``) reach the view at most once a second per
backend: the WAL counters are read this long after the phase, and are approximate to
about a second's flushes at either edge. Write transactions are counted by the
transaction ids the cluster assigned in the phase (every store takes one, the sampler and
read-only statements none); the count is the cluster's, so a maintenance transaction of
autovacuum (an analyze writes its statistics) lands in it now and then."""


def embedded_url(pgdata: Path) -> str:
    """The superuser URL of the benchmark's own embedded Postgres (its socket directory)."""
    return f"postgresql://postgres@/postgres?host={pgdata}"


WAL_WAITS = ("LWLock:WALWrite", "IO:WalSync", "IO:WalWrite")


def grouped(backends: dict[str, float]) -> dict[str, float]:
    """Backends on average, in the groups a reader acts on: running, waiting for the WAL
    (a commit's flush), waiting on anything else, waiting for the service's next
    statement inside a transaction (a round trip), idle in the pool."""
    groups = dict.fromkeys(("running", "wal", "other waits", "round trip", "idle"), 0.0)
    for kind, mean in backends.items():
        if kind == "active, running":
            group = "running"
        elif kind.startswith("active, waiting on "):
            wal = kind.removeprefix("active, waiting on ") in WAL_WAITS
            group = "wal" if wal else "other waits"
        elif kind.startswith("idle in transaction"):
            group = "round trip"
        else:
            group = "idle"
        groups[group] = round(groups[group] + mean, 2)
    return groups


def _kind(state: str | None, waiting: str) -> str:
    """One backend's sample as the table names it."""
    if state == "active":
        return f"active, waiting on {waiting}" if waiting else "active, running"
    return state or "unknown"


@dataclasses.dataclass
class Waits:
    """The samples of one phase and the WAL counters before and after it."""

    samples: int = 0
    states: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    before: dict[str, Any] = dataclasses.field(default_factory=dict)
    after: dict[str, Any] = dataclasses.field(default_factory=dict)

    def result(self) -> dict[str, Any]:
        """Backends per state on average; write transactions and time per WAL flush."""
        per_sample = {
            kind: round(count / self.samples, 2) for kind, count in self.states.most_common()
        }
        commits = self.after["next_xid"] - self.before["next_xid"]
        flushes = self.after["flushes"] - self.before["flushes"]
        flush_ms = self.after["flush_ms"] - self.before["flush_ms"]
        return {
            "samples": self.samples,
            "backends": per_sample,
            "write_transactions": commits,
            "wal_flushes": flushes,
            "commits_per_flush": round(commits / flushes, 2) if flushes else None,
            "ms_per_flush": round(flush_ms / flushes, 3)
            if flushes and self.after["timed"]
            else None,
        }


async def _counters(conn: asyncpg.Connection[Any]) -> dict[str, Any]:
    row = await conn.fetchrow(COUNTERS)
    assert row is not None
    return dict(row)


async def _sample(conn: asyncpg.Connection[Any], waits: Waits, stop: asyncio.Event) -> None:
    while not stop.is_set():
        for row in await conn.fetch(ACTIVITY):
            waits.states[_kind(row["state"], row["waiting"])] += 1
        waits.samples += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_INTERVAL_S)


async def time_wal_flushes(url: str) -> None:
    """Turn on ``track_wal_io_timing`` (a superuser setting, reloaded at once)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ALTER SYSTEM SET track_wal_io_timing = on")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def sampled(url: str) -> AsyncIterator[Waits]:
    """Sample the backends of ``url``'s database while the block runs (its own
    connection, not counted)."""
    conn = await asyncpg.connect(url)
    waits = Waits()
    stop = asyncio.Event()
    try:
        waits.before = await _counters(conn)
        sampler = asyncio.create_task(_sample(conn, waits, stop))
        try:
            yield waits
        finally:
            stop.set()
            await sampler
        await asyncio.sleep(SETTLE_S)
        waits.after = await _counters(conn)
    finally:
        await conn.close()
