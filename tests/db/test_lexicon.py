"""The per-agent BM25 statistics (migration 0007) stay exact on every write, and no write
waits for another to keep them.

``current`` reads them the way the recall statement does (folded counts plus the backlog);
``recount`` is the truth, counted from the rows themselves.
"""

from __future__ import annotations

import asyncio

from service.db.pool import Database
from service.models import TenantId

CURRENT = """
WITH backlog AS (
    SELECT c.sign, c.simple, c.english FROM lexicon_changes c
    WHERE c.tenant_id = $1 AND c.agent_id = $2
), changes AS (
    SELECT 'simple'::regconfig AS config, l.lexeme AS term, b.sign AS df, 0 AS len
    FROM backlog b CROSS JOIN LATERAL unnest(b.simple) l
    UNION ALL
    SELECT 'english'::regconfig, l.lexeme, b.sign, 0
    FROM backlog b CROSS JOIN LATERAL unnest(b.english) l
    UNION ALL
    SELECT 'simple'::regconfig, '', b.sign, b.sign * length(b.simple) FROM backlog b
    UNION ALL
    SELECT 'english'::regconfig, '', b.sign, b.sign * length(b.english) FROM backlog b
    WHERE b.english IS NOT NULL
), everything AS (
    SELECT t.config, t.term, t.df, t.len FROM lexicon_terms t
    WHERE t.tenant_id = $1 AND t.agent_id = $2
    UNION ALL
    SELECT * FROM changes
)
SELECT config::text || ':' || term AS key, sum(df)::bigint AS df, sum(len)::bigint AS len
FROM everything GROUP BY config, term HAVING sum(df) <> 0 OR sum(len) <> 0
"""

RECOUNT = """
WITH m AS (SELECT content_tsv, content_tsv_en FROM memories WHERE tenant_id = $1 AND agent_id = $2)
SELECT 'simple:' || l.lexeme AS key, count(*) AS df, 0::bigint AS len
FROM m CROSS JOIN LATERAL unnest(m.content_tsv) l GROUP BY l.lexeme
UNION ALL
SELECT 'english:' || l.lexeme, count(*), 0 FROM m CROSS JOIN LATERAL unnest(m.content_tsv_en) l
GROUP BY l.lexeme
UNION ALL
SELECT 'simple:', count(*), sum(length(content_tsv)) FROM m HAVING count(*) > 0
UNION ALL
SELECT 'english:', count(*), sum(length(content_tsv_en)) FROM m HAVING count(*) > 0
"""

INSERT = (
    "INSERT INTO memories (tenant_id, agent_id, content) SELECT $1, $2, t FROM unnest($3::text[]) t"
)


async def _agent(db: Database, slug: str = "lex") -> tuple[TenantId, int]:
    async with db.admin_tx() as conn:
        tenant = TenantId(
            await conn.fetchval("INSERT INTO tenants (slug) VALUES ($1) RETURNING id", slug)
        )
        agent = int(
            await conn.fetchval(
                "INSERT INTO agents (tenant_id, name) VALUES ($1, 'a') RETURNING id", tenant
            )
        )
    return tenant, agent


async def _stats(
    db: Database, tenant: TenantId, agent: int, query: str
) -> dict[str, tuple[int, int]]:
    async with db.tenant_tx(tenant) as conn:
        rows = await conn.fetch(query, tenant, agent)
    return {r["key"]: (int(r["df"]), int(r["len"])) for r in rows}


async def _assert_exact(db: Database, tenant: TenantId, agent: int) -> None:
    assert await _stats(db, tenant, agent, CURRENT) == await _stats(db, tenant, agent, RECOUNT)


async def test_statistics_stay_exact_through_inserts_edits_and_deletes(db: Database) -> None:
    tenant, agent = await _agent(db)
    texts = [f"Caroline prefers running shoes number {i}" for i in range(150)]
    async with db.tenant_tx(tenant) as conn:
        for text in texts[:100]:  # one statement per row: the backlog folds at 64
            await conn.execute(INSERT, tenant, agent, [text])
        await conn.execute(INSERT, tenant, agent, texts[100:])  # one bulk statement
    await _assert_exact(db, tenant, agent)
    async with db.tenant_tx(tenant) as conn:
        folded = await conn.fetchval(
            "SELECT df FROM lexicon_terms WHERE tenant_id = $1 AND agent_id = $2 "
            "AND config = 'english'::regconfig AND term = 'prefer'",
            tenant,
            agent,
        )
        await conn.execute(
            "UPDATE memories SET content = 'Melanie paints lakes ' || id WHERE tenant_id = $1 "
            "AND id IN (SELECT id FROM memories WHERE tenant_id = $1 ORDER BY id LIMIT 30)",
            tenant,
        )
        await conn.execute(
            "DELETE FROM memories WHERE tenant_id = $1 AND content LIKE '%number 1%'", tenant
        )
    assert folded is not None
    assert folded >= 64
    await _assert_exact(db, tenant, agent)
    stats = await _stats(db, tenant, agent, CURRENT)
    assert stats["english:paint"][0] == 30
    assert stats["english:"][0] == stats["simple:"][0] == 100  # rows "number 100".."149" deleted


async def test_deleting_the_agent_leaves_no_statistics_behind(db: Database) -> None:
    tenant, agent = await _agent(db)
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(INSERT, tenant, agent, [f"note {i}" for i in range(70)])
        await conn.execute("DELETE FROM agents WHERE tenant_id = $1 AND id = $2", tenant, agent)
        left = await conn.fetchval(
            "SELECT (SELECT count(*) FROM lexicon_terms WHERE agent_id = $1)"
            " + (SELECT count(*) FROM lexicon_changes WHERE agent_id = $1)",
            agent,
        )
    assert left == 0


async def test_rebuild_repairs_and_agrees_with_the_running_counts(db: Database) -> None:
    tenant, agent = await _agent(db)
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(INSERT, tenant, agent, [f"tea and cake {i}" for i in range(80)])
        await conn.execute(
            "UPDATE lexicon_terms SET df = df + 1000 WHERE tenant_id = $1 AND agent_id = $2",
            tenant,
            agent,
        )
        await conn.execute("SELECT lexicon_rebuild($1, $2)", tenant, agent)
    await _assert_exact(db, tenant, agent)


async def test_an_open_write_never_blocks_another_write_to_the_same_agent(db: Database) -> None:
    """A long import holds its transaction open; a store into the same agent commits at
    once (the backlog is append-only and folding only ever *tries* the agent's lock)."""
    tenant, agent = await _agent(db)
    async with db.tenant_tx(tenant) as conn:
        await conn.execute(INSERT, tenant, agent, [f"seed row {i}" for i in range(63)])
    async with db.pool.acquire() as long, long.transaction():
        await long.execute(*db.entering(tenant))
        await long.execute(INSERT, tenant, agent, ["imported row one", "imported row two"])
        await long.execute(INSERT, tenant, agent, ["imported row three"])  # folds: holds the lock

        async def store() -> None:
            async with db.tenant_tx(tenant) as conn:
                await conn.execute(INSERT, tenant, agent, ["a store meanwhile"])
                await conn.execute(INSERT, tenant, agent, ["another store meanwhile"])

        await asyncio.wait_for(store(), timeout=10)
    await _assert_exact(db, tenant, agent)
