"""A large declared graph, bulk-loaded with SQL, for the traverse plan guard
(tests/db/test_traverse_plan.py) and the traverse latency bench (bench/latency/traverse.py).

One agent ``target`` of tenant ``graph`` gets ``entities`` entities and ``relations``
entity-to-entity relations (ends spread pseudo-randomly, a tenth of them on one hub,
entity ``E0``), every entity mentioned by one of 1,000 memories; a second tenant holds
the same shape again as noise. ANALYZE runs after the load.
"""

from __future__ import annotations

from typing import Any

LOAD_TIMEOUT_SECONDS = 600.0

LOAD = """
WITH agent AS (
    INSERT INTO agents (tenant_id, name) VALUES ($1, 'target') RETURNING tenant_id, id
), mems AS (
    INSERT INTO memories (tenant_id, agent_id, content)
    SELECT a.tenant_id, a.id, 'memory ' || g FROM agent a, generate_series(1, 1000) g
    RETURNING tenant_id, id, agent_id
), ents AS (
    INSERT INTO entities (tenant_id, agent_id, name, normalized)
    SELECT a.tenant_id, a.id, 'E' || g, 'e' || g FROM agent a, generate_series(0, $2 - 1) g
    RETURNING tenant_id, id, agent_id
)
SELECT (SELECT min(id) FROM ents), (SELECT min(id) FROM mems), (SELECT id FROM agent)
"""

RELATIONS = """
INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate, object_kind,
                       object_id, declared_at)
SELECT $1, $2, 'entity',
       $3 + CASE WHEN g % 10 = 0 THEN 0 ELSE (g::bigint * 7919) % $5 END,
       'p' || (g % 7), 'entity', $3 + (g::bigint * 104729 + 13) % $5,
       now() - make_interval(secs => g)
FROM generate_series(1, $4) g
ON CONFLICT DO NOTHING
"""

MENTIONS = """
INSERT INTO entity_mentions (tenant_id, entity_id, ref_kind, ref_id)
SELECT $1, $2 + g, 'mem', $3 + g % 1000 FROM generate_series(0, $4 - 1) g
"""


async def load_graph(
    conn: Any, tenant: Any, entities: int = 10_000, relations: int = 100_000
) -> None:
    """Load the graph into ``tenant`` (an admin connection: RLS is the owner's to bypass)."""
    first_entity, first_memory, agent = await conn.fetchrow(
        LOAD, tenant, entities, timeout=LOAD_TIMEOUT_SECONDS
    )
    await conn.execute(
        RELATIONS, tenant, agent, first_entity, relations, entities, timeout=LOAD_TIMEOUT_SECONDS
    )
    await conn.execute(
        MENTIONS, tenant, first_entity, first_memory, entities, timeout=LOAD_TIMEOUT_SECONDS
    )


async def load_tenants(conn: Any, entities: int = 10_000, relations: int = 100_000) -> str:
    """The target tenant ``graph`` and a noise tenant of the same shape; the target's id."""
    tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('graph') RETURNING id")
    noise = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('graph-noise') RETURNING id")
    for each in (tenant, noise):
        await load_graph(conn, each, entities, relations)
    await conn.execute("ANALYZE")
    return str(tenant)
