"""The pool against a database that goes away and comes back, and against exhaustion.

The database is reached through a loopback TCP proxy (an external ``DATABASE_URL``)
that the test cuts and restores: while it is cut every transaction fails at once
with DatabaseUnavailable (no connect attempt per request), and once it is back the
pool reconnects on its own, with backoff.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from service.db.pool import Database
from service.errors import DatabaseBusy, DatabaseUnavailable
from tests.proxy import database_proxy


async def _ping_until_up(db: Database, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        try:
            assert await db.ping()
            return time.monotonic() - started
        except DatabaseUnavailable:
            await asyncio.sleep(0.05)
    raise AssertionError(f"the pool did not reconnect within {within} s")


async def test_a_database_that_goes_away_fails_fast_and_the_pool_reconnects(
    database_url: str,
) -> None:
    async with database_proxy(database_url) as proxy:
        db = await Database(proxy.url, min_size=1, max_size=2, acquire_timeout=2).open()
        try:
            assert await db.ping()
            await proxy.cut()
            with pytest.raises(DatabaseUnavailable):
                await db.ping()  # the pooled connection died with its server
            with pytest.raises(DatabaseUnavailable):
                await db.ping()  # a new one cannot be opened: now it is down
            assert not db.availability.up
            started = time.monotonic()
            for _ in range(20):
                with pytest.raises(DatabaseUnavailable) as down:
                    async with db.admin_conn():
                        pass
            assert time.monotonic() - started < 0.5  # no connect attempt per request
            assert down.value.retry_after >= 1
            await proxy.restore()
            await _ping_until_up(db, within=10)
            assert db.availability.up
        finally:
            await db.close()


async def test_a_full_pool_is_database_busy_after_the_acquire_timeout(database_url: str) -> None:
    db = await Database(database_url, min_size=1, max_size=1, acquire_timeout=0.3).open()
    try:
        async with db.admin_conn():
            started = time.monotonic()
            with pytest.raises(DatabaseBusy) as busy:
                async with db.admin_conn():
                    pass
            assert 0.25 < time.monotonic() - started < 2
        assert busy.value.retry_after == 1.0
        assert db.availability.up  # busy is not down
    finally:
        await db.close()


async def test_bulk_lane_transactions_never_take_the_main_pool(database_url: str) -> None:
    db = await Database(database_url, max_size=1, bulk_size=1, acquire_timeout=0.3).open()
    try:
        async with db.admin_conn():  # the main pool is exhausted
            with db.bulk_lane():
                assert await db.ping()  # the bulk pool still answers
                async with db.admin_conn():
                    with pytest.raises(DatabaseBusy):  # and is bounded too
                        await db.ping()
    finally:
        await db.close()
