"""Migration 0023 on a populated database (docs/architecture.md, "Passages"): the
passages written before it are walked through the half-precision index, the
full-precision index is gone, and an invalid leftover of an interrupted concurrent build
is dropped and built again."""

from __future__ import annotations

from service.db import agents, migrate
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.migrations.leftovers import leave_invalid_index
from tests.migrations.test_passages_agent_index import MEMORY, PASSAGE

INDEXES = """
SELECT c.relname, i.indisvalid, pg_get_indexdef(i.indexrelid) AS definition
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname LIKE 'passages\\_%' AND pg_get_indexdef(i.indexrelid) LIKE '%hnsw%'
ORDER BY c.relname
"""
WALK = """
SELECT item_id FROM passages WHERE tenant_id = $1 AND embedding_dim = 384
ORDER BY embedding::halfvec(384) <#> array_fill(0.05::float4, ARRAY[384])::vector::halfvec(384)
LIMIT 5
"""


async def test_0023_walks_the_passages_written_before_it_by_their_half_precision_index(
    lib: Library, database_url: str
) -> None:
    migrate.downgrade(database_url, "0022")
    tenant = TenantId((await tenants.create_tenant(lib.db, "before-0023")).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        for n in range(4):
            memory = await conn.fetchval(MEMORY, tenant, agent, f"long note {n}")
            await conn.execute(PASSAGE, tenant, memory)
    await leave_invalid_index(lib, "passages_halfvec_384", "passages", "agent_id")
    migrate.upgrade(database_url)
    async with lib.db.admin_tx() as conn:
        indexes = {row["relname"]: row for row in await conn.fetch(INDEXES)}
    assert sorted(indexes) == ["passages_halfvec_1536", "passages_halfvec_384"], indexes
    assert indexes["passages_halfvec_384"]["indisvalid"]
    assert (
        "hnsw (((embedding)::halfvec(384)) halfvec_ip_ops)"
        in (indexes["passages_halfvec_384"]["definition"])
    )
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute("SET LOCAL enable_seqscan = off")
        assert len(await conn.fetch(WALK, tenant)) == 5
        plan = "\n".join(row[0] for row in await conn.fetch("EXPLAIN " + WALK, tenant))
    assert "Index Scan using passages_halfvec_384" in plan, plan
