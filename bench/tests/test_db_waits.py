"""The database-wait sampler of the store benchmark, against the test's real Postgres."""

from __future__ import annotations

import asyncio

import asyncpg

from bench.throughput import db_waits, report as run_report, run


def test_sampled_states_fall_into_the_groups_a_reader_acts_on() -> None:
    backends = {
        "active, running": 0.5,
        "active, waiting on LWLock:WALWrite": 1.25,
        "active, waiting on IO:WalSync": 0.25,
        "active, waiting on Lock:transactionid": 0.5,
        "idle in transaction": 2.0,
        "idle in transaction (aborted)": 0.25,
        "idle": 3.0,
    }
    assert db_waits.grouped(backends) == {
        "running": 0.5,
        "wal": 1.5,
        "other waits": 0.5,
        "round trip": 2.25,
        "idle": 3.0,
    }


async def test_a_transaction_left_waiting_and_the_commits_are_seen(
    direct_database_url: str,
) -> None:
    """One connection holds a transaction open (the service between two statements),
    another commits ten writes and runs twenty reads: the samples show about one backend
    idle in a transaction and the ten write transactions are counted, the reads not. The
    count is the cluster's transaction ids, which the test cluster's autovacuum also takes
    now and then (an analyze of another test's tables), so a few more are allowed and
    twenty are not."""
    holder = await asyncpg.connect(direct_database_url)
    writer = await asyncpg.connect(direct_database_url)
    try:
        await writer.execute("CREATE TABLE waits_probe (n int)")
        async with db_waits.sampled(direct_database_url) as waits:
            transaction = holder.transaction()
            await transaction.start()
            await holder.execute("SELECT 1")
            for n in range(10):
                await writer.execute("INSERT INTO waits_probe VALUES ($1)", n)
                await writer.fetchval("SELECT count(*) FROM waits_probe")
                await writer.fetchval("SELECT $1::int + 1", n)
            await writer.execute("SELECT pg_stat_force_next_flush()")
            await asyncio.sleep(0.3)
            await transaction.rollback()
        result = waits.result()
    finally:
        await holder.close()
        await writer.close()
    assert result["samples"] >= 10
    assert 0.5 <= db_waits.grouped(result["backends"])["round trip"] <= 1.0
    assert 10 <= result["write_transactions"] <= 14
    # the test server runs with fsync off, so it flushes nothing; a benchmark's does
    assert (result["wal_flushes"] == 0) == (result["commits_per_flush"] is None)


def test_the_report_shows_a_row_per_sampled_phase() -> None:
    waits = {
        "samples": 100,
        "backends": {"idle in transaction": 1.5, "active, waiting on IO:WalSync": 0.5},
        "write_transactions": 400,
        "wal_flushes": 100,
        "commits_per_flush": 4.0,
        "ms_per_flush": 2.5,
    }
    stores = [
        {"size": "short", "clients": 8, "db_waits": waits},
        {"size": "short", "clients": 1, "db_waits": None},
    ]
    lines = run_report.waits_table(stores)
    rows = [line for line in lines if line.startswith("| short")]
    assert rows == ["| short | 8 | 0.00 | 0.50 | 0.00 | 1.50 | 0.00 | 4.0 | 2.50 |"]


def test_a_short_store_run_through_the_service_reports_its_backends() -> None:
    """bench.throughput.run --db-waits end to end: a real serve on its embedded Postgres, the
    official client, the sampler beside it; every measured store is one write transaction."""
    args = run.parse_args(
        ["--calls", "30", "--warmup", "5", "--list-calls", "2", "--clients", "2",
         "--sizes", "short", "--env", "CPERSONA_EMBEDDING_MODE=none", "--skip-starts",
         "--db-waits"]
    )  # fmt: skip
    results = run.run(args)
    (phase,) = results["store"]
    waits = phase["db_waits"]
    assert phase["outcomes"] == {"stored": 30}
    assert waits["samples"] > 0
    assert waits["write_transactions"] >= 30
    assert "Postgres backends on average" in run_report.markdown(results)
