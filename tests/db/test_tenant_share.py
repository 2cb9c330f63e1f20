"""A tenant's share of the pool's connections (issue 36, the soak's missed target).

One tenant's slow statements (a recall at the input cap spent seconds in Postgres) held
every pooled connection, and the other tenants waited for one until ``database_busy``.
With ``tenant_share`` a tenant holds at most that share of the pool at a time; its next
transaction waits behind its own, and never in the pool's queue, so a free connection goes
to another tenant first. Nested transactions of one request never wait for their own
request (docs/reliability.md, "Fair shares of the database (hardening round three)").
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from service.db.pool import Database
from service.errors import DatabaseBusy
from service.memory.tenants import create_tenant
from service.models import TenantId


@asynccontextmanager
async def pool(url: str, share: float, wait: float = 5.0) -> AsyncIterator[Database]:
    db = await Database(
        url, min_size=1, max_size=4, acquire_timeout=wait, tenant_share=share
    ).open()
    try:
        yield db
    finally:
        await db.close()


async def _tenants(db: Database, *slugs: str) -> list[TenantId]:
    return [TenantId((await create_tenant(db, slug)).id) for slug in slugs]


async def _hold(db: Database, tenant: TenantId, held: asyncio.Event, done: asyncio.Event) -> None:
    """One transaction of ``tenant`` that sets ``held`` once it has its connection."""
    async with db.tenant_tx(tenant) as conn:
        await conn.execute("SELECT 1")
        held.set()
        await done.wait()


async def test_a_tenant_holds_at_most_its_share_and_another_tenant_is_served(
    database_url: str,
) -> None:
    async with pool(database_url, 0.5) as db:
        flooder, victim = await _tenants(db, "flooder", "victim")
        done = asyncio.Event()
        holds = [asyncio.Event() for _ in range(3)]
        tasks = [asyncio.create_task(_hold(db, flooder, held, done)) for held in holds]
        await asyncio.wait_for(asyncio.gather(holds[0].wait(), holds[1].wait()), 5)
        await asyncio.sleep(0.3)
        assert not holds[2].is_set()  # two of four connections: its share; two stay free
        async with asyncio.timeout(1), db.tenant_tx(victim) as conn:
            assert await conn.fetchval("SELECT 1") == 1
        done.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert holds[2].is_set()


async def test_the_wait_for_a_share_is_bounded_by_the_acquire_timeout(database_url: str) -> None:
    async with pool(database_url, 0.25, wait=0.5) as db:
        (tenant,) = await _tenants(db, "acme")
        done, held = asyncio.Event(), asyncio.Event()
        holder = asyncio.create_task(_hold(db, tenant, held, done))
        await asyncio.wait_for(held.wait(), 5)
        with pytest.raises(DatabaseBusy, match=r"0\.5 s"):
            async with db.tenant_tx(tenant):
                pass
        done.set()
        await holder


async def test_nested_transactions_of_one_request_do_not_wait_for_their_own_share(
    database_url: str,
) -> None:
    async with pool(database_url, 0.25, wait=1.0) as db:
        (tenant,) = await _tenants(db, "acme")
        async with db.tenant_tx(tenant) as outer, db.tenant_tx(tenant) as inner:
            assert await outer.fetchval("SELECT 1") == await inner.fetchval("SELECT 2") - 1


async def test_a_task_a_request_started_counts_once_the_request_has_ended(
    database_url: str,
) -> None:
    async with pool(database_url, 0.25, wait=0.5) as db:
        (tenant,) = await _tenants(db, "acme")
        ended, held, done = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def later() -> None:
            await ended.wait()
            await _hold(db, tenant, held, done)

        async with db.tenant_tx(tenant):
            task = asyncio.create_task(later())  # inherits the request's context
        ended.set()
        await asyncio.wait_for(held.wait(), 5)
        with pytest.raises(DatabaseBusy):  # the task holds the tenant's one place
            async with db.tenant_tx(tenant):
                pass
        done.set()
        await task


async def test_share_one_turns_the_bound_off(database_url: str) -> None:
    async with pool(database_url, 1.0) as db:
        (tenant,) = await _tenants(db, "acme")
        done = asyncio.Event()
        holds = [asyncio.Event() for _ in range(4)]
        tasks = [asyncio.create_task(_hold(db, tenant, held, done)) for held in holds]
        await asyncio.wait_for(asyncio.gather(*(held.wait() for held in holds)), 5)
        done.set()
        await asyncio.gather(*tasks)
