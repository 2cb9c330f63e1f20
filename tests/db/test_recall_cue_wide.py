"""A wide time cue's lists against the exact ones (docs/tools.md, "Time cues").

``recall_cue_wide`` finds a wide period's lists through the indexes: its text, newest and
episode lists are the exact statement's, its vector list is HNSW's (approximate). On a
populated agent (more memories in the period than ``recall_cue.NARROW_ROWS``, each with a
vector of its own direction) a few memories of the period lie clearly nearest the query:
both statements must return them first, and neither one the memory nearer still that lies
outside the period. The exact statement returns all five; the wide one at least four:
HNSW is approximate, and on this corpus (uniformly random directions, the five near ones
near-copies of each other, which the graph's neighbour pruning links sparsely) its walk
missed one of the five in about one run in seven. When the index walk gives up before
the list is full (a small agent in a large table, past ``hnsw.max_scan_tuples``; here the
iterative scan is switched off and ``hnsw.ef_search`` is 10, so the walk returns 10 rows
at most), the wide statement's vector list is the exact one.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

from service.db import recall as recall_queries, recall_cue
from service.db.pool import Connection, Database
from service.db.sql import shaped_arguments
from service.memory.recall import query_terms
from service.models import TenantId

NOW = datetime(2026, 12, 1, tzinfo=UTC)
MEMORIES = recall_cue.NARROW_ROWS * 2
"""The agent's memories, one an hour back from NOW: the year holds more than the cap."""
LOAD = """
INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at, embedding)
SELECT a.tenant_id, a.id,
       'note ' || g || ' about ' || (ARRAY['tea', 'coffee', 'cats', 'dogs', 'music'])[1 + g % 5],
       to_char($2::timestamptz - make_interval(hours => g), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       $2::timestamptz - make_interval(hours => g),
       l2_normalize(array(
           SELECT h - floor(h) - 0.5
           FROM generate_series(1, 384) k,
                LATERAL (SELECT sin(g * 12.9898 + k * 78.233) * 43758.5453 AS h) x)::vector)
FROM generate_series(1, $3::int) g
JOIN agents a ON a.tenant_id = $1 AND a.name = 'target'
"""
NEAR = """
INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at, embedding)
SELECT a.tenant_id, a.id, $4::text || ' ' || n,
       to_char($2::timestamptz, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), $2::timestamptz,
       l2_normalize(array(SELECT CASE WHEN k = 1 THEN 1.0 WHEN k = n + 1 THEN $3::float8
                                      ELSE 0.0 END FROM generate_series(1, 384) k)::vector)
FROM generate_series(1, 5) n
JOIN agents a ON a.tenant_id = $1 AND a.name = 'target'
RETURNING id
"""
"""Five memories at one time (labelled $4), each nearly the query's direction (cosine
about 0.995 for an offset of 0.1; the load's pseudo-random directions lie near 0)."""
QUERY_VECTOR = [1.0] + [0.0] * 383
SCOPE = recall_queries.Scope("target", None, "", None)
YEAR = (NOW - timedelta(days=365), NOW)


async def _load(db: Database) -> tuple[TenantId, list[int], list[int]]:
    """The agent, its five clearly near memories in the year, and five nearer still (the
    query's own direction) two years back, outside it."""
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('wide') RETURNING id")
        await conn.execute("INSERT INTO agents (tenant_id, name) VALUES ($1, 'target')", tenant)
        await conn.execute(LOAD, tenant, NOW, MEMORIES, timeout=600)
        within = await conn.fetch(NEAR, tenant, NOW - timedelta(days=100), 0.1, "clearly near")
        outside = await conn.fetch(NEAR, tenant, NOW - timedelta(days=730), 0.0, "clearly old")
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE memories")
    return (
        TenantId(uuid.UUID(str(tenant))),
        [r["id"] for r in within],
        [r["id"] for r in outside],
    )


def _search(query: str, vector: list[float] | None) -> recall_cue.CueSearch:
    terms = query_terms.build(query)
    return recall_cue.CueSearch(
        start=YEAR[0],
        end=YEAR[1],
        vector=vector,
        floor=0.15,
        tsquery=terms.tsquery,
        lexemes=list(terms.lexemes),
        patterns=list(terms.patterns),
        recency=not query,
        episodes=True,
        depth=50,
    )


async def _lists(
    conn: Connection, tenant: TenantId, search: recall_cue.CueSearch, *, wide: bool
) -> dict[str, list[int]]:
    statement = recall_cue.cue_statement(SCOPE, search, wide=wide)
    values = recall_cue.cue_values(tenant, SCOPE, search)
    name = recall_cue.cue_name(search, wide)
    records = await conn.fetch(statement, *shaped_arguments(name, statement, values))
    lists: dict[str, list[int]] = {}
    for record in sorted(records, key=lambda r: (r["channel"], r["position"])):
        lists.setdefault(record["channel"], []).append(record["id"])
    return lists


async def test_a_wide_periods_lists_agree_with_the_exact_ones_on_a_clear_case(
    db: Database,
) -> None:
    tenant, near, outside = await _load(db)
    vector_search = _search("clearly 123", QUERY_VECTOR)
    async with db.tenant_tx(tenant) as conn:
        assert await recall_cue.is_wide(conn, tenant, SCOPE, vector_search)
        exact = await _lists(conn, tenant, vector_search, wide=False)
        wide = await _lists(conn, tenant, vector_search, wide=True)
        assert sorted(exact["cue_vector"][:5]) == sorted(near), exact
        walked = [memory for memory in wide["cue_vector"] if memory in near]
        assert len(walked) >= len(near) - 1, wide  # approximate: see the module docstring
        assert wide["cue_vector"][: len(walked)] == walked, wide  # and what it found first
        assert not set(outside) & set(wide["cue_vector"])
        assert wide["cue_text"] == exact["cue_text"]
        assert set(wide) == set(exact) == {"cue_vector", "cue_text"}
        found = await recall_cue.cue_candidates(conn, tenant, SCOPE, vector_search)
        assert [h.id for h in found if h.channel == "cue_vector"] == wide["cue_vector"]
        for query in ("tea music", ""):
            words = _search(query, None)
            assert await _lists(conn, tenant, words, wide=True) == await _lists(
                conn, tenant, words, wide=False
            )


async def test_a_wide_period_whose_index_walk_gives_up_gets_the_exact_vector_list(
    db: Database,
) -> None:
    tenant, near, _ = await _load(db)
    search = dataclasses.replace(_search("clearly", QUERY_VECTOR), floor=-1.0)  # 50 rows
    async with db.tenant_tx(tenant) as conn:
        await conn.execute("SET LOCAL hnsw.ef_search = 10")
        await conn.execute("SET LOCAL hnsw.iterative_scan = off")
        exact = await _lists(conn, tenant, search, wide=False)
        wide = await _lists(conn, tenant, search, wide=True)
    assert len(exact["cue_vector"]) == 50
    assert wide["cue_vector"] == exact["cue_vector"]
    assert sorted(wide["cue_vector"][:5]) == sorted(near)
