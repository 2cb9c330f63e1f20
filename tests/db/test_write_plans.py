"""Plan guard: the write path's statements keep their indexes with generic plans.

The store statement (and its read-only probe), the pause check and the write-behind's
claim and settle run in tenant transactions with cached plans
(``tenant_tx(cached_plans=True)``), so after a few executions Postgres may run a
*generic* plan, made without the values. These tests force the generic plan
(``plan_cache_mode = force_generic_plan``, as the application role in a tenant
transaction) over 20,000 memories with their jobs and 15,000 passages, loaded with SQL
and analysed, and check that no statement scans the agent's memories, the queue or the
passages (settle replaces a row's passages by their key): the msg_id probe uses
the partial dedup index, the content probe its hash index, the claim the jobs' item key.
"""

from __future__ import annotations

from service.db import sql
from service.db.pool import Database
from service.models import TenantId

LOAD = """
WITH agent AS (
    INSERT INTO agents (tenant_id, name)
    SELECT $1, 'agent' || n FROM generate_series(0, 9) n RETURNING id
), rows AS (
    INSERT INTO memories (tenant_id, agent_id, msg_id, content)
    SELECT $1, (SELECT min(id) FROM agent) + g % 10,
           CASE WHEN g % 2 = 0 THEN 'msg-' || g ELSE '' END, 'note ' || g || ' ' || md5(g::text)
    FROM generate_series(1, 20000) g
    RETURNING id
), jobs AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id) SELECT $1, 'mem', id FROM rows
)
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash, start_char,
                      end_char, embedding, embedding_model)
SELECT $1, (SELECT min(id) FROM agent), 'mem', id, i, '\\x00', i * 10, i * 10 + 10,
       '[1,0,0]', 'model'
FROM rows, generate_series(0, 2) i
WHERE id % 4 = 0
"""


async def _loaded(db: Database) -> TenantId:
    async with db.admin_tx() as conn:
        tenant = TenantId(
            await conn.fetchval("INSERT INTO tenants (slug) VALUES ('w') RETURNING id")
        )
        await conn.execute(LOAD, tenant)
    async with db.admin_conn() as conn:
        await conn.execute("ANALYZE")
    return tenant


async def _generic_plans(db: Database, tenant: TenantId, calls: dict[str, str]) -> dict[str, str]:
    """EXPLAIN EXECUTE of each named statement with the given literal arguments."""
    plans: dict[str, str] = {}
    async with db.tenant_tx(tenant, cached_plans=True) as conn:
        await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        for name, literals in calls.items():
            await conn.execute(f"PREPARE guard_{name} AS {sql.QUERIES[name]}")
            rows = await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE guard_{name}({literals})")
            plans[name] = "\n".join(row[0] for row in rows)
    return plans


async def test_the_write_path_keeps_its_indexes_under_generic_plans(db: Database) -> None:
    tenant = await _loaded(db)
    plans = await _generic_plans(
        db,
        tenant,
        {
            "store_memory": f"'{tenant}', 'agent3', '', '', 'msg-4', 'note new', '{{}}', 't',"
            " NULL, '{}', '{\"\"}', '{\"\"}', NULL, NULL, true, NULL, 'session-1'",
            "probe_memory_duplicate": f"'{tenant}', 'agent3', 'msg-4', 'note new', '{{\"\"}}',"
            " '{\"\"}'",
            "claim_embedding_items": f"'{tenant}', '{{mem,mem}}', '{{5,6}}', 60.0",
            "settle_embeddings": f"'{tenant}', '{{1}}', '{{2026-12-01T00:00:00Z}}', '{{mem}}',"
            " '{5}', '{NULL}', '{NULL}', 'model', true, '{5}', '{0}', '{0}', '{10}', '{NULL}'",
            "pauses_in_force": f"'{tenant}', ''",
        },
    )
    for probe in (plans["store_memory"], plans["probe_memory_duplicate"]):
        assert "Index Scan using memories_dedup_msg_id on memories" in probe, probe
        assert "memories_content_probe on memories" in probe, probe
    for name, plan in plans.items():
        for table in ("memories", "embedding_jobs", "passages"):
            assert f"Seq Scan on {table}" not in plan, f"{name}:\n{plan}"
    assert "embedding_jobs_item_key" in plans["claim_embedding_items"], plans
