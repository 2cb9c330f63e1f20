"""Plan guard: the cue arm finds a period's memories through an index on their own time.

A time cue's period is a narrow slice of an agent's memories (a month of a year), found
by each memory's parsed timestamp (``timestamp_at``). Without an index on that column
the statement reads every memory of the agent and filters (measured at 10k memories:
about 30 ms of a 100 ms cued recall, docs/reliability.md, "CPersona 2.6 tier (issue 32)");
``memories_agent_time`` (migration 0021) reads the period only.

The corpus is bulk-loaded with SQL (100,000 memories over 10 agents of one tenant,
timestamps an hour apart over about a year, no embeddings: the vector list reads the
period's rows, so it needs none to show the plan), then ANALYZE runs. EXPLAIN runs as the
application role inside a tenant transaction, as the cue arm does, for a sure one-month
period with a query vector and words, and for an empty query (the period's newest).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from service.db import recall as recall_queries, recall_cue
from service.db.pool import Database
from service.db.sql import shaped_arguments
from service.memory.recall import query_terms
from service.models import TenantId

LOAD_TIMEOUT_SECONDS = 600.0
LOAD = """
INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at, created_at)
SELECT a.tenant_id, a.id,
       'note ' || g || ' about ' || (ARRAY['tea', 'coffee', 'cats', 'dogs', 'music'])[1 + g % 5],
       to_char($2::timestamptz - make_interval(hours => g / 10), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       $2::timestamptz - make_interval(hours => g / 10),
       $2::timestamptz - make_interval(secs => g)
FROM generate_series(1, 100000) g
JOIN agents a ON a.tenant_id = $1 AND a.name = (CASE WHEN g % 10 = 0 THEN 'target'
                                                    ELSE 'other' || (g % 10) END)
"""
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SCOPE = recall_queries.Scope("target", None, "", None)


async def _load(db: Database) -> TenantId:
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('cue') RETURNING id")
        await conn.execute(
            "INSERT INTO agents (tenant_id, name) SELECT $1::uuid, 'target' UNION ALL "
            "SELECT $1::uuid, 'other' || n FROM generate_series(1, 9) n",
            tenant,
        )
        await conn.execute(LOAD, tenant, NOW, timeout=LOAD_TIMEOUT_SECONDS)
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    return TenantId(uuid.UUID(str(tenant)))


def _search(query: str) -> recall_cue.CueSearch:
    terms = query_terms.build(query)
    start = NOW - timedelta(days=120)
    return recall_cue.CueSearch(
        start=start,
        end=start + timedelta(days=30),
        vector=[1.0] + [0.0] * 383 if query else None,
        floor=0.15,
        tsquery=terms.tsquery,
        lexemes=list(terms.lexemes),
        patterns=list(terms.patterns),
        recency=not query,
        episodes=True,
        depth=50,
    )


async def _plan(db: Database, tenant: TenantId, search: recall_cue.CueSearch) -> str:
    values = recall_cue.cue_values(tenant, SCOPE, search)
    statement = recall_cue.cue_statement(SCOPE, search)
    async with db.tenant_tx(tenant) as conn:
        rows = await conn.fetch(
            "EXPLAIN (COSTS OFF) " + statement,
            *shaped_arguments("recall_cue_384", statement, values),
        )
    return "\n".join(row[0] for row in rows)


async def test_the_cue_reads_a_periods_memories_through_their_time_index_at_100k(
    db: Database,
) -> None:
    tenant = await _load(db)
    for query in ("tea music", ""):
        plan = await _plan(db, tenant, _search(query))
        assert "Seq Scan on memories" not in plan, plan
        assert "memories_agent_time on memories" in plan, plan
        assert "Index Scan using memories_isolation" not in plan, plan
