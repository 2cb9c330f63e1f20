"""Recall finds an agent's passages and episodes by the walk that suits how many it has
(docs/reliability.md, "Long-record costs: recall beside an agent with many passages").

An HNSW index holds every agent's rows and filters to the recalling agent's after the
walk, so for an agent with none or few of them beside an agent with many, the walk would
read on through the other agent's (to ``hnsw.max_scan_tuples``). The vector statement
therefore counts the agent's passages and episodes first (part ``walk_counts``, up to
``recall.WALK_FROM``): that many or more are walked by HNSW, fewer ranked exactly, none not
read at all. Which branch ran is read off EXPLAIN ANALYZE of the statement the service
sends; each branch must find the record whose vector is the query.
"""

from __future__ import annotations

import uuid
from typing import Any

from service.db import recall as recall_queries
from service.db.pool import Database
from service.models import TenantId
from tests.recall_statements import production_calls

MEMORIES = """
INSERT INTO memories (tenant_id, agent_id, content, embedding)
SELECT a.tenant_id, a.id, 'long note ' || g,
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                          WHERE g > 0)::vector)
FROM generate_series(1, $3::int) g JOIN agents a ON a.tenant_id = $1 AND a.name = $2
"""
PASSAGES = """
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash, start_char,
                      end_char, embedding, embedding_model)
SELECT m.tenant_id, m.agent_id, 'mem', m.id, i, m.content_hash, i * 100, i * 100 + 120,
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                          WHERE m.id > 0 AND i >= 0)::vector),
       'test-model'
FROM memories m JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
CROSS JOIN generate_series(0, 2) i
WHERE a.tenant_id = $1 AND a.name = $2
"""
PASSAGE_VECTOR = """
SELECT p.item_id, p.embedding::float4[] AS vector FROM passages p
JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
WHERE a.tenant_id = $1 AND a.name = $2 ORDER BY p.item_id DESC, p.idx DESC LIMIT 1
"""
BIG = recall_queries.WALK_FROM // 3 + 1
"""Memories of the agent with many passages (three each: more than the bound)."""
WALK = "Index Scan using passages_embedding_384 on passages"
EPISODE_WALK = "Index Scan using episodes_embedding_384 on episodes"
EPISODES = """
INSERT INTO episodes (tenant_id, agent_id, summary, embedding, embedding_model)
SELECT a.tenant_id, a.id, 'session ' || g,
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384)
                          WHERE g > 0)::vector),
       'test-model'
FROM generate_series(1, $3::int) g JOIN agents a ON a.tenant_id = $1 AND a.name = $2
"""
EPISODE_VECTOR = """
SELECT e.id, e.embedding::float4[] AS vector FROM episodes e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE a.tenant_id = $1 AND a.name = $2 ORDER BY e.id DESC LIMIT 1
"""


async def _load(db: Database) -> TenantId:
    """One tenant: ``big`` (three passages a memory and as many episodes as the bound),
    ``few`` (ten memories with passages, ten episodes) and ``none`` (ten memories, nothing
    else)."""
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('walk') RETURNING id")
        await conn.execute(
            "INSERT INTO agents (tenant_id, name) SELECT $1, unnest($2::text[])",
            tenant,
            ["big", "few", "none"],
        )
        for name, rows in (("big", BIG), ("few", 10), ("none", 10)):
            await conn.execute(MEMORIES, tenant, name, rows)
        for name in ("big", "few"):
            await conn.execute(PASSAGES, tenant, name)
        for name, rows in (("big", recall_queries.WALK_FROM), ("few", 10)):
            await conn.execute(EPISODES, tenant, name, rows)
    async with db.pool.acquire() as conn:
        await conn.execute("VACUUM ANALYZE passages")
        await conn.execute("VACUUM ANALYZE episodes")
        await conn.execute("ANALYZE memories")
    return TenantId(tenant)


async def _vector_statement(
    db: Database,
    tenant: TenantId,
    agent: str,
    vector: list[float],
    *,
    serial: bool = True,
    planner: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """EXPLAIN ANALYZE of the vector half of a default recall of ``agent``, and its rows,
    in a transaction entered as recall's retrieval enters it (generic plans, ``serial``),
    with the ``planner`` statement run first when given."""
    scope = recall_queries.Scope(agent, None, "", None)
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute(*db.entering(tenant, generic_plans=True, serial=serial))
        if planner is not None:
            await conn.execute(planner)
        calls = await production_calls(conn, uuid.UUID(str(tenant)), agent, "note", vector, scope)
        statement, args = calls[-1]
        plan = await conn.fetch("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + statement, *args)
        rows = await conn.fetch(statement, *args)
    return "\n".join(r[0] for r in plan), [dict(r) for r in rows]


def _walked(plan: str, scan: str = WALK) -> bool:
    """Whether the HNSW ``scan`` ran (a branch cut off shows "never executed")."""
    line = next(line for line in plan.splitlines() if scan in line)
    return "never executed" not in line


def _exact_ran(plan: str) -> bool:
    """Whether a scan of the agent's passages through ``passages_agent`` read rows past
    the count (the exact ranking's branch)."""
    scans = [line for line in plan.splitlines() if "passages_agent on passages" in line]
    return sum("never executed" not in line for line in scans) > 1


async def _last_vector(
    db: Database, tenant: TenantId, agent: str, query: str = PASSAGE_VECTOR
) -> tuple[int, list[float]]:
    """The id and vector of ``agent``'s last passage (``query`` ``EPISODE_VECTOR``: episode)."""
    async with db.admin_tx() as conn:
        row = await conn.fetchrow(query, tenant, agent)
    assert row is not None
    return int(row[0]), [float(x) for x in row["vector"]]


def _best_vector_hit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return max((r for r in rows if r["channel"] == "vector"), key=lambda r: r["score"])


async def test_many_passages_are_walked_and_few_are_ranked_exactly(db: Database) -> None:
    tenant = await _load(db)
    for agent, walks in (("big", True), ("few", False)):
        memory, vector = await _last_vector(db, tenant, agent)
        plan, rows = await _vector_statement(db, tenant, agent, vector)
        assert _walked(plan) is walks, plan
        assert _exact_ran(plan) is not walks, plan
        best = _best_vector_hit(rows)
        assert (best["kind"], best["id"]) == ("mem", memory)
        assert best["part_cosine"] > 0.999


async def test_an_agent_without_passages_does_not_walk_the_others(db: Database) -> None:
    tenant = await _load(db)
    _, vector = await _last_vector(db, tenant, "big")
    plan, rows = await _vector_statement(db, tenant, "none", vector)
    assert not _walked(plan), plan
    assert not _exact_ran(plan), plan
    assert rows
    assert all(r["part_cosine"] is None for r in rows)


async def test_episodes_are_walked_from_the_bound_and_found_either_way(db: Database) -> None:
    tenant = await _load(db)
    for agent, walks in (("big", True), ("few", False)):
        episode, vector = await _last_vector(db, tenant, agent, EPISODE_VECTOR)
        plan, rows = await _vector_statement(db, tenant, agent, vector)
        assert _walked(plan, EPISODE_WALK) is walks, plan
        best = _best_vector_hit(rows)
        assert (best["kind"], best["id"]) == ("ep", episode)
        assert best["score"] > 0.999


async def test_an_agent_without_episodes_does_not_walk_the_others(db: Database) -> None:
    tenant = await _load(db)
    _, vector = await _last_vector(db, tenant, "big", EPISODE_VECTOR)
    plan, rows = await _vector_statement(db, tenant, "none", vector)
    assert not _walked(plan, EPISODE_WALK), plan
    assert all(r["kind"] == "mem" for r in rows)


def _passage_reads(plan: str) -> list[str]:
    """The scans of ``passages`` that ran, other than through ``passages_agent`` (the
    count and the exact ranking): the lexical hits' passages and the records' counts."""
    return [
        line
        for line in plan.splitlines()
        if " on passages" in line and "passages_agent" not in line and "never executed" not in line
    ]


async def test_an_agent_without_passages_reads_none_for_its_word_matches(db: Database) -> None:
    """A passage count of 0 also spares the lexical hits' passages and the found records'
    passage counts (a primary-key probe each, about 120 a recall, for nothing)."""
    tenant = await _load(db)
    _, vector = await _last_vector(db, tenant, "big")
    for agent, reads in (("none", False), ("few", True)):
        plan, rows = await _vector_statement(db, tenant, agent, vector)
        assert any(r["channel"] == "cosine" for r in rows), rows
        assert bool(_passage_reads(plan)) is reads, plan


PARALLEL_EAGER = (
    "SELECT set_config('parallel_setup_cost', '0', true),"
    " set_config('parallel_tuple_cost', '0', true),"
    " set_config('min_parallel_table_scan_size', '0', true),"
    " set_config('min_parallel_index_scan_size', '0', true)"
)
"""Planner costs under which this test's small tables get parallel plans, as the
default costs give a single agent's 80,000 passages at 100k rows."""


async def _gathers(db: Database, tenant: TenantId, vector: list[float], serial: bool) -> str:
    """The Gather lines of the vector statement's generic plan for ``big`` (EXPLAIN
    ANALYZE under eager parallel costs), in a transaction entered ``serial`` or not."""
    plan, _ = await _vector_statement(
        db, tenant, "big", vector, serial=serial, planner=PARALLEL_EAGER
    )
    return "\n".join(line for line in plan.splitlines() if "Gather" in line or "Workers" in line)


async def test_a_serial_recall_transaction_starts_no_parallel_workers(db: Database) -> None:
    """Entered ``serial`` (as recall's retrieval is), the vector statement plans no
    Gather; under the same costs without it, its parts start parallel workers, the
    off branches too."""
    tenant = await _load(db)
    _, vector = await _last_vector(db, tenant, "big")
    assert "Workers Launched" in await _gathers(db, tenant, vector, serial=False)
    assert await _gathers(db, tenant, vector, serial=True) == ""
