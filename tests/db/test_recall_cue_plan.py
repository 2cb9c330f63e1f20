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

A wide period (a year: about 8,760 of the target's 10,000 memories) is another plan
(``recall_cue_wide``): reading it through the time index is reading the agent, so its
lists come from the indexes recall's own lists use (HNSW, full text) filtered to the
period. Its guard gives the target's memories vectors and runs EXPLAIN ANALYZE under a
statement timeout of the cue's own time limit: it counts the rows the plan reads from
memories, which must be a small part of the period.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from service.config import Settings
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
PERIOD_ROWS = 8_760
"""The target's memories in the year before NOW (one an hour)."""


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


EMBED = """
UPDATE memories m
SET embedding = l2_normalize(array(
        SELECT h - floor(h) - 0.5
        FROM generate_series(1, 384) k,
             LATERAL (SELECT sin(m.id * 12.9898 + k * 78.233) * 43758.5453 AS h) x)::vector)
FROM agents a
WHERE a.tenant_id = $1 AND a.name = 'target' AND m.agent_id = a.id
"""
"""Vectors for the target's memories (a pseudo-random direction per row, from a hash of
its id), for the wide plan, whose vector list walks the HNSW index of the embedded memories."""


def _search(query: str, ago: int = 120, days: int = 30) -> recall_cue.CueSearch:
    """A period of ``days`` days that starts ``ago`` days before NOW."""
    terms = query_terms.build(query)
    start = NOW - timedelta(days=ago)
    return recall_cue.CueSearch(
        start=start,
        end=start + timedelta(days=days),
        vector=[1.0] + [0.0] * 383 if query else None,
        floor=0.15,
        tsquery=terms.tsquery,
        lexemes=list(terms.lexemes),
        patterns=list(terms.patterns),
        recency=not query,
        episodes=True,
        depth=50,
    )


async def _plan(
    db: Database, tenant: TenantId, search: recall_cue.CueSearch, *, wide: bool = False
) -> str:
    values = recall_cue.cue_values(tenant, SCOPE, search)
    statement = recall_cue.cue_statement(SCOPE, search, wide=wide)
    async with db.tenant_tx(tenant) as conn:
        rows = await conn.fetch(
            "EXPLAIN (COSTS OFF) " + statement,
            *shaped_arguments(recall_cue.cue_name(search, wide), statement, values),
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


def _nodes(plan: dict[str, object]) -> Iterator[dict[str, object]]:
    yield plan
    for child in plan.get("Plans", []):  # type: ignore[attr-defined]
        yield from _nodes(child)


async def _rows_read(db: Database, tenant: TenantId, search: recall_cue.CueSearch) -> int:
    """EXPLAIN ANALYZE of the wide statement, under a statement timeout of the cue's own
    time limit (a cue statement that alone spends it has spent the recall's): the rows
    its scans of memories return or filter out, every loop counted."""
    values = recall_cue.cue_values(tenant, SCOPE, search)
    statement = recall_cue.cue_statement(SCOPE, search, wide=True)
    limit_ms = Settings().recall_cue_time_limit_ms
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(f"SET LOCAL statement_timeout = {limit_ms}")
        raw = await conn.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement,
            *shaped_arguments("recall_cue_wide_384", statement, values),
        )
    plan = raw[0]["Plan"]  # the pool decodes json
    return sum(
        (int(node["Actual Rows"]) + int(node.get("Rows Removed by Filter", 0)))  # type: ignore[call-overload]
        * int(node["Actual Loops"])  # type: ignore[call-overload]
        for node in _nodes(plan)
        if node.get("Relation Name") == "memories"
    )


async def test_a_wide_cue_finds_its_lists_through_the_indexes_not_the_period_at_100k(
    db: Database,
) -> None:
    tenant = await _load(db)
    async with db.admin_tx() as conn:
        await conn.execute(EMBED, tenant, timeout=LOAD_TIMEOUT_SECONDS)
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE memories")
    async with db.tenant_tx(tenant) as conn:
        assert not await recall_cue.is_wide(conn, tenant, SCOPE, _search("note"))
        assert await recall_cue.is_wide(conn, tenant, SCOPE, _search("note", ago=365, days=365))
    for query in ("4570 8830", ""):
        search = _search(query, ago=365, days=365)
        plan = await _plan(db, tenant, search, wide=True)
        assert "Seq Scan on memories" not in plan, plan
        if query:
            assert "memories_embedding_384 on memories" in plan, plan
        read = await _rows_read(db, tenant, search)
        assert read < PERIOD_ROWS // 10, (read, plan)
