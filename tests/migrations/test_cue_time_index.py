"""Migration 0021 on a populated database (docs/reliability.md, "CPersona 2.6 tier (issue
32)"): memories stored before it are in ``memories_agent_time`` (those with a timestamp),
and an invalid leftover of an interrupted concurrent build is dropped and built again."""

from __future__ import annotations

from datetime import UTC, datetime

from service.db import agents, migrate
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.migrations.leftovers import leave_invalid_index

MEMORY = "INSERT INTO memories (tenant_id, agent_id, content, timestamp_at) VALUES ($1, $2, $3, $4)"
VALID = """
SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) AS definition
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'memories_agent_time'
"""
IN_PERIOD = """
SELECT count(*) FROM memories
WHERE tenant_id = $1 AND agent_id = $2 AND timestamp_at >= $3 AND timestamp_at < $4
"""


async def _populate(lib: Library, slug: str) -> tuple[TenantId, int]:
    tenant = TenantId((await tenants.create_tenant(lib.db, slug)).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        for day in range(1, 11):
            stamp = datetime(2026, 3, day, tzinfo=UTC)
            await conn.execute(MEMORY, tenant, agent, f"note {day}", stamp)
        await conn.execute(MEMORY, tenant, agent, "no time", None)
    return tenant, agent


async def test_0021_indexes_the_memories_stored_before_it(lib: Library, database_url: str) -> None:
    migrate.downgrade(database_url, "0020")
    tenant, agent = await _populate(lib, "before-0021")
    await leave_invalid_index(lib, "memories_agent_time", "memories", "tenant_id")
    migrate.upgrade(database_url)
    async with lib.db.admin_tx() as conn:
        index = await conn.fetchrow(VALID)
    assert index is not None
    assert index["indisvalid"], index
    assert "(tenant_id, agent_id, timestamp_at)" in index["definition"], index
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("SET LOCAL enable_seqscan = off")
        start, end = datetime(2026, 3, 3, tzinfo=UTC), datetime(2026, 3, 6, tzinfo=UTC)
        assert await conn.fetchval(IN_PERIOD, tenant, agent, start, end) == 3
        plan = await conn.fetch("EXPLAIN " + IN_PERIOD, tenant, agent, start, end)
    assert "memories_agent_time" in "\n".join(row[0] for row in plan)
