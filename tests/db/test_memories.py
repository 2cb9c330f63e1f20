"""The store statement (``store_memory``): agent registration, dedup and the job, at once.

The statement registers an agent on its first write. When two first writes of one agent
race, the second's snapshot predates the first's commit, so it cannot see the agent row
the first inserted; it must still store its row (under that agent), not report a
phantom duplicate. The race is made deterministic: the first transaction stays open
until the second statement is seen waiting on its lock.
"""

from __future__ import annotations

import asyncio
import time

from service.db import memories
from service.db.pool import Database
from service.memory import tenants
from service.models import TenantId

BLOCKED_WITHIN_SECONDS = 10.0


def _row(content: str) -> memories.NewMemory:
    return memories.NewMemory(
        agent_name="fresh",
        project_id="",
        channel="",
        msg_id="",
        content=content,
        source={"type": "test"},
        timestamp_text="2026-12-01T00:00:00Z",
        timestamp_at=None,
        metadata={},
    )


async def _store(db: Database, tenant: TenantId, content: str) -> memories.StoreResult:
    async with db.tenant_tx(tenant) as conn:
        return await memories.store_memory(
            conn, tenant, _row(content), [""], [""], memories.QueuedJob()
        )


async def _wait_until_a_statement_waits_on_a_lock(db: Database) -> None:
    deadline = time.monotonic() + BLOCKED_WITHIN_SECONDS
    while time.monotonic() < deadline:
        async with db.admin_conn() as conn:
            waiting = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        if waiting:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the second first-write never waited on the first one")


async def test_a_first_write_racing_another_of_the_same_new_agent_is_stored(
    db: Database,
) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "race")).id)
    async with db.tenant_tx(tenant) as first_conn:
        first = await memories.store_memory(
            first_conn, tenant, _row("one"), [""], [""], memories.QueuedJob()
        )
        second_task = asyncio.create_task(_store(db, tenant, "two"))
        await _wait_until_a_statement_waits_on_a_lock(db)
    second = await asyncio.wait_for(second_task, BLOCKED_WITHIN_SECONDS)
    assert first.inserted_id is not None
    assert first.queued
    assert second.inserted_id is not None
    assert second.queued
    async with db.admin_conn() as conn:
        owners = await conn.fetch(
            "SELECT m.id, a.name FROM memories m JOIN agents a"
            " ON a.tenant_id = m.tenant_id AND a.id = m.agent_id WHERE m.tenant_id = $1",
            tenant,
        )
        jobs = await conn.fetchval(
            "SELECT count(*) FROM embedding_jobs WHERE tenant_id = $1", tenant
        )
    assert sorted((r["id"], r["name"]) for r in owners) == sorted(
        [(first.inserted_id, "fresh"), (second.inserted_id, "fresh")]
    )
    assert jobs == 2


async def test_a_duplicate_writes_no_row_and_no_job(db: Database) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "dup")).id)
    first = await _store(db, tenant, "same words")
    again = await _store(db, tenant, "same words")
    assert again.inserted_id is None
    assert not again.queued
    assert again.duplicate_content == first.inserted_id
    async with db.admin_conn() as conn:
        jobs = await conn.fetchval(
            "SELECT count(*) FROM embedding_jobs WHERE tenant_id = $1", tenant
        )
    assert jobs == 1


async def _obeying(
    db: Database, tenant: TenantId, content: str, session_key: str
) -> memories.StoreResult:
    async with db.tenant_tx(tenant, cached_plans=True) as conn:
        return await memories.store_memory(
            conn, tenant, _row(content), [""], [""], memories.QueuedJob(), session_key
        )


async def _written(db: Database, tenant: TenantId) -> tuple[int, int, int]:
    async with db.admin_conn() as conn:
        record = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM agents WHERE tenant_id = $1) AS agents,"
            " (SELECT count(*) FROM memories WHERE tenant_id = $1) AS memories,"
            " (SELECT count(*) FROM embedding_jobs WHERE tenant_id = $1) AS jobs",
            tenant,
        )
    assert record is not None
    return record["agents"], record["memories"], record["jobs"]


async def test_a_write_obeying_a_pause_writes_nothing_and_returns_the_longest_pause(
    db: Database,
) -> None:
    """Under the tenant-wide pause and a longer one of its session, the statement
    registers no agent, inserts no row and queues no job, and returns the session's
    pause (the one that lasts longer); another session's pause does not stop a write,
    and a write that is not asked to obey (NULL) never reads one."""
    tenant = TenantId((await tenants.create_tenant(db, "paused")).id)
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(
            "INSERT INTO persistence_pauses (tenant_id, session_key, expires_at, created_by)"
            " VALUES ($1, 's1', now() + interval '1 hour', 'test'),"
            " ($1, '', now() + interval '10 minutes', 'test')",
            tenant,
        )
    paused = await _obeying(db, tenant, "kept out", "s1")
    assert paused.pause is not None
    assert paused.pause.session_key == "s1"
    assert 3000 < paused.pause.remaining <= 3600
    assert paused.inserted_id is None
    tenant_wide = await _obeying(db, tenant, "kept out", "")
    assert tenant_wide.pause is not None
    assert tenant_wide.pause.session_key == ""
    assert await _written(db, tenant) == (0, 0, 0)
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(
            "DELETE FROM persistence_pauses WHERE tenant_id = $1 AND session_key = ''", tenant
        )
    other_session = await _obeying(db, tenant, "let in", "s2")
    assert other_session.pause is None
    assert other_session.inserted_id is not None
    unguarded = await _store(db, tenant, "not asked")
    assert unguarded.pause is None
    assert unguarded.inserted_id is not None
    assert await _written(db, tenant) == (1, 2, 2)
