"""Migration 0022 on a populated database (docs/reliability.md, "Long-record costs"):
passages written before it are in ``passages_agent``, and an invalid leftover of an
interrupted concurrent build is dropped and built again."""

from __future__ import annotations

from service.db import agents, migrate
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.migrations.leftovers import leave_invalid_index

MEMORY = "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, $3) RETURNING id"
PASSAGE = """
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash, start_char,
                      end_char, embedding, embedding_model)
SELECT m.tenant_id, m.agent_id, 'mem', m.id, i, m.content_hash, i * 10, i * 10 + 10,
       array_fill(0.05::float4, ARRAY[384])::vector, 'test-model'
FROM memories m, generate_series(0, 2) i WHERE m.tenant_id = $1 AND m.id = $2
"""
VALID = """
SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) AS definition
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'passages_agent'
"""
OF_AGENT = "SELECT count(*) FROM passages WHERE tenant_id = $1 AND agent_id = $2 AND idx >= 0"


async def _populate(lib: Library, slug: str) -> tuple[TenantId, int]:
    tenant = TenantId((await tenants.create_tenant(lib.db, slug)).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        for n in range(4):
            memory = await conn.fetchval(MEMORY, tenant, agent, f"long note {n}")
            await conn.execute(PASSAGE, tenant, memory)
    return tenant, agent


async def test_0022_indexes_the_passages_written_before_it(lib: Library, database_url: str) -> None:
    migrate.downgrade(database_url, "0021")
    tenant, agent = await _populate(lib, "before-0022")
    await leave_invalid_index(lib, "passages_agent", "passages", "agent_id")
    migrate.upgrade(database_url)
    async with lib.db.admin_tx() as conn:
        index = await conn.fetchrow(VALID)
    assert index is not None
    assert index["indisvalid"], index
    assert "(tenant_id, agent_id) WHERE (idx >= 0)" in index["definition"], index
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("SET LOCAL enable_seqscan = off")
        assert await conn.fetchval(OF_AGENT, tenant, agent) == 12
        plan = await conn.fetch("EXPLAIN " + OF_AGENT, tenant, agent)
    assert "passages_agent" in "\n".join(row[0] for row in plan)
