"""Plan guard: at 100k memories the recall statement uses the scoped and search indexes.

Both full-text vectors (the exact-word ``memories_tsv`` and the stemmed
``memories_tsv_en``) are searched through their scoped GIN indexes, the vector channel
through HNSW, and the BM25 statistics are read by primary key from ``lexicon_terms`` (kept
on write by migration 0007's triggers, which run during the bulk load below): nothing
scans the agent's rows, also for a query of common words only (the starvation top-up).

The corpus is bulk-loaded with SQL (100,000 memories over 20 agents of two tenants;
5,000 of the target agent's rows carry unit embeddings; one row in twenty, of every
agent, has three passages with their own vectors). The vector channel searches the
passages through their own HNSW index with the per-record collapse in the same
statement (docs/architecture.md, "Passages"), after counting the agent's passages through
``passages_agent`` (migration 0022), and ranks them exactly through that index when they
are few. The HNSW indexes are
dropped during the load and recreated from their own definitions (a bulk build is
far faster than row-by-row insertion), then ANALYZE runs, so the planner sees the
production indexes with real statistics. EXPLAIN runs as the application role
inside a tenant transaction, exactly like a recall.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from service.db import recall as recall_queries
from service.db.pool import Database
from service.models import TenantId
from tests.recall_statements import production_calls, sql_literals

LOAD_TIMEOUT_SECONDS = 600.0
LOAD = """
INSERT INTO memories (tenant_id, agent_id, content, embedding, embedding_model, created_at)
SELECT a.tenant_id, a.id,
       'note ' || g || ' about ' || (ARRAY['tea', 'coffee', 'cats', 'dogs', 'music', 'travel',
       'work', 'family', 'garden', 'books'])[1 + g % 10] || ' ' || md5(g::text),
       CASE WHEN a.name = 'target' AND g % 2 = 0
            THEN l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                                    WHERE g > 0)::vector) END,
       'test-model', now() - make_interval(secs => g)
FROM generate_series(1, 100000) g
JOIN agents a ON a.name = (CASE WHEN g % 10 = 0 THEN 'target' ELSE 'other' || (g % 19) END)
"""
PASSAGES = """
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash, start_char,
                      end_char, embedding, embedding_model)
SELECT m.tenant_id, m.agent_id, 'mem', m.id, i, m.content_hash, i * 100, i * 100 + 120,
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                          WHERE m.id > 0 AND i >= 0)::vector),
       'test-model'
FROM memories m, generate_series(0, 2) i
WHERE m.id % 20 = 0
"""

EPISODES = """
INSERT INTO episodes (tenant_id, agent_id, summary, embedding, embedding_model)
SELECT a.tenant_id, a.id, 'session ' || g || ' about ' || (ARRAY['tea', 'cats'])[1 + g % 2],
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                          WHERE g > 0)::vector),
       'test-model'
FROM generate_series(1, 20000) g
JOIN agents a ON a.name = (CASE WHEN g % 10 = 0 THEN 'target' ELSE 'other' || (g % 19) END)
"""


async def _load(db: Database) -> str:
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('plan') RETURNING id")
        other = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('noise') RETURNING id")
        await conn.execute(
            "INSERT INTO agents (tenant_id, name) SELECT $1::uuid, 'target' UNION ALL "
            "SELECT CASE WHEN n % 2 = 0 THEN $1::uuid ELSE $2::uuid END, 'other' || n "
            "FROM generate_series(0, 18) n",
            tenant,
            other,
        )
        hnsw = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%'"
        )
        for index in hnsw:
            await conn.execute(f'DROP INDEX "{index["indexname"]}"')
        # the bulk load and the HNSW builds may take longer than the pool's 30 s statement
        # timeout on a loaded machine; the test's own time limit bounds them
        await conn.execute(LOAD, timeout=LOAD_TIMEOUT_SECONDS)
        await conn.execute(PASSAGES, timeout=LOAD_TIMEOUT_SECONDS)
        await conn.execute(EPISODES, timeout=LOAD_TIMEOUT_SECONDS)
        for index in hnsw:
            await conn.execute(index["indexdef"], timeout=LOAD_TIMEOUT_SECONDS)
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    return str(tenant)


async def _plans(
    db: Database, tenant: str, query: str, scope: recall_queries.Scope, *, generic: bool
) -> str:
    """The plans of the statements the service sends for a default (hybrid) recall
    (lexical depth 100, vector depth 20, its own query terms) in ``scope``, one after
    the other: planned per call, or (``generic``) as a reusable recall runs them, in a
    transaction entered with ``generic_plans``, prepared, then EXPLAIN EXECUTE with the
    values as literals, which a generic plan does not look at."""
    vector = [1.0] + [0.0] * 383
    tenant_id = TenantId(uuid.UUID(tenant))
    plans = []
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute(*db.entering(tenant_id, generic_plans=generic))
        calls = await production_calls(conn, uuid.UUID(tenant), scope.agent, query, vector, scope)
        for statement, args in calls:
            plans.append(await (_generic_plan if generic else _custom_plan)(conn, statement, args))
    assert len(plans) == 2  # the lexical half and the vector half
    return "\n".join(plans)


async def _custom_plan(conn: Any, statement: str, args: list[Any]) -> str:
    rows = await conn.fetch("EXPLAIN (COSTS OFF) " + statement, *args)
    return "\n".join(row[0] for row in rows)


async def _generic_plan(conn: Any, statement: str, args: list[Any]) -> str:
    await conn.execute(f"PREPARE guard_recall AS {statement}")
    literals = await sql_literals(conn, statement, args)
    rows = await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE guard_recall({literals})")
    await conn.execute("DEALLOCATE guard_recall")
    return "\n".join(row[0] for row in rows)


def _assert_indexed(plan: str, memory_hnsw: bool = True) -> None:
    """The search indexes in ``plan``; ``memory_hnsw`` False where the planner may read
    the agent's scoped memories exactly by an index of the scope instead of the memories'
    HNSW (the ``as_of`` shape, docs/reliability.md)."""
    assert "Seq Scan on memories" not in plan, plan
    if memory_hnsw:
        assert "Index Scan using memories_embedding_384 on memories" in plan, plan
    assert "Index Scan using passages_embedding_384 on passages" in plan, plan
    assert "Only Scan using passages_agent on passages" in plan, plan  # the count
    # episodes: through the count's index, then HNSW or (the planner's choice for an agent
    # of about a thousand, the corpus's average) exactly through a scoped index; no scan
    assert re.search(r"Index Only Scan using episodes_\w+ on episodes c\n", plan), plan
    assert "Seq Scan on episodes" not in plan, plan
    assert "Seq Scan on passages" not in plan, plan
    assert "Bitmap Index Scan on memories_tsv " in plan or "memories_tsv\n" in plan, plan
    assert "Bitmap Index Scan on memories_tsv_en" in plan, plan
    assert "Index Scan using lexicon_terms_pkey on lexicon_terms" in plan, plan
    assert "Seq Scan on lexicon_terms" not in plan, plan
    scoped = ("memories_agent_recent", "memories_isolation", "memories_content_probe")
    assert any(f"Scan using {name}" in plan or f"Scan on {name}" in plan for name in scoped)


QUERIES = ("tea 4242", "travelling", "notes about it")
"""A rare word plus an id; a topic word (10% of rows); words in every row (the top-up)."""
DEFAULT_SCOPE = recall_queries.Scope("target", None, "", None)
FILTERED_SCOPE = recall_queries.Scope("target", "proj", "chan", None)
AS_OF_HALF = 50_000
"""``as_of`` this many seconds ago: half the corpus was written before it."""


def _as_of_scope() -> recall_queries.Scope:
    """``as_of`` in the middle of the corpus: the records written after it and those
    superseded by then are left out inside the scope, a row filter and a probe of
    relations per row (docs/tools.md, "Facts that change"); the search indexes stay."""
    moment = datetime.now(UTC) - timedelta(seconds=AS_OF_HALF)
    return recall_queries.Scope("target", None, "", None, as_of=moment)


async def test_recall_uses_scoped_search_and_vector_indexes_at_100k(db: Database) -> None:
    tenant = await _load(db)
    for query in QUERIES:
        _assert_indexed(await _plans(db, tenant, query, DEFAULT_SCOPE, generic=False))
    # the shapes that run generic plans keep the same indexes, made without the values
    for scope in (DEFAULT_SCOPE, FILTERED_SCOPE):
        assert recall_queries.plan_reusable(scope)
        for query in QUERIES:
            plan = await _plans(db, tenant, query, scope, generic=True)
            _assert_indexed(plan)
            assert "Sort Key: ((m.embedding)::vector(384) <#>" not in plan, plan
    assert recall_queries.plan_reusable(_as_of_scope())
    for query in QUERIES:
        for generic in (True, False):
            _assert_indexed(await _plans(db, tenant, query, _as_of_scope(), generic=generic), False)
