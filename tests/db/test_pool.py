"""The pool: every named query stays prepared per connection (the recall statement
included), and tenant transactions plan for their values unless asked to reuse plans
(``cached_plans``, Postgres's choice) or to run generic plans (``generic_plans``).

asyncpg caches prepared statements only up to ``max_cacheable_statement_size``; its default
(15 KiB) left the recall statement out, so every recall parsed it again (an extra round
trip, and Postgres's parse, analysis and rewrite of thirty-odd CTEs).
"""

from __future__ import annotations

import pytest

from service.db import recall as recall_queries, recall_side, sql
from service.db.pool import APP_ROLE, MAX_CACHED_STATEMENT_CHARS, Database, Planning
from service.memory import tenants
from service.models import TenantId
from tests.servers import pooling

SETTINGS = (
    "SELECT current_user, current_setting('app.tenant_id'),"
    " current_setting('plan_cache_mode') AS plans"
)
COSTS = "SELECT current_setting('hnsw.ef_search', true), current_setting('random_page_cost')"


def test_every_named_query_fits_the_statement_cache() -> None:
    longest = max(sql.QUERIES, key=lambda name: len(sql.QUERIES[name]))
    assert len(sql.QUERIES[longest]) <= MAX_CACHED_STATEMENT_CHARS, longest


async def test_a_repeated_recall_statement_is_prepared_once_per_connection(db: Database) -> None:
    if pooling.db_pooler() == "pgbouncer":
        pytest.skip("behind a transaction pooler the statement cache is off by design")
    tenant = TenantId((await tenants.create_tenant(db, "cached")).id)
    scope = recall_queries.Scope("agent", None, "", None)
    wanted = recall_queries.Retrieval(
        vector=None, tsquery="'tea'", lexemes=["tea"], patterns=[], limit=10,
        episodes=True, recency=False, query="tea",
    )  # fmt: skip
    statement = recall_queries.lexical_statement(scope, wanted)
    async with db.tenant_tx(tenant, generic_plans=recall_queries.plan_reusable(scope)) as conn:
        for _ in range(3):
            await recall_queries.recall_candidates(conn, tenant, scope, wanted)
        prepared = await conn.fetch(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
            statement,
        )
    # one prepared statement of this shape, its one generic plan run three times
    assert [tuple(row) for row in prepared] == [(3, 0)]


def test_the_recall_statement_is_rendered_once_per_shape() -> None:
    wanted = recall_queries.Retrieval(
        vector=None, tsquery="'tea'", lexemes=["tea"], patterns=[], limit=10,
        episodes=True, recency=False, query="tea", vector_depth=5,
    )  # fmt: skip
    plain = recall_queries.lexical_statement(recall_queries.Scope("a", None, "", None), wanted)
    assert plain is recall_queries.lexical_statement(
        recall_queries.Scope("b", None, "", None), wanted
    )
    for absent in ("project_id = $3", "m.channel = $4", "LIKE $5"):
        assert absent not in plain
    assert "LIMIT 10" in plain
    nearest = recall_queries.vector_statement(recall_queries.Scope("a", None, "", None), wanted)
    assert nearest is recall_queries.vector_statement(
        recall_queries.Scope("b", None, "", None), wanted
    )
    assert "LIMIT 5::int" in nearest
    assert "m.channel = $4" not in nearest
    filtered = recall_queries.lexical_statement(recall_queries.Scope("a", "p", "c", "x%"), wanted)
    for present in ("project_id = $3", "m.channel = $4", "LIKE $5"):
        assert present in filtered
    assert recall_queries.plan_reusable(recall_queries.Scope("a", "p", "c", None))
    assert not recall_queries.plan_reusable(recall_queries.Scope("a", None, "", "x%"))


async def test_generic_plans_keep_the_planner_costs_and_plan_once(db: Database) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "generic-plans")).id)
    async with db.tenant_tx(tenant, generic_plans=True) as conn:
        row = await conn.fetchrow(SETTINGS)
        assert tuple(await conn.fetchrow(COSTS) or ())[1] == str(db.planning.random_page_cost)
        await recall_side.plan_each_statement(conn)
        again = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
    assert row is not None
    assert tuple(row) == (APP_ROLE, str(tenant), "force_generic_plan")
    assert again == "force_custom_plan"
    async with db.admin_conn() as conn:
        assert await conn.fetchval("SELECT current_setting('plan_cache_mode')") == "auto"


async def test_a_tenant_transaction_plans_each_statement_for_its_values_by_default(
    db: Database,
) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "plans")).id)
    async with db.tenant_tx(tenant) as conn:
        row = await conn.fetchrow(SETTINGS)
    assert row is not None
    assert tuple(row) == (APP_ROLE, str(tenant), "force_custom_plan")


async def test_cached_plans_keep_the_role_and_tenant_and_let_postgres_reuse_plans(
    db: Database,
) -> None:
    tenant = TenantId((await tenants.create_tenant(db, "cached-plans")).id)
    async with db.tenant_tx(tenant, cached_plans=True) as conn:
        row = await conn.fetchrow(SETTINGS)
    assert row is not None
    assert tuple(row) == (APP_ROLE, str(tenant), "auto")
    async with db.admin_conn() as conn:
        after = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
    assert after == "auto"


async def test_tenant_transactions_search_hnsw_as_broadly_as_the_database_is_told(
    database_url: str,
) -> None:
    """``hnsw.ef_search`` (CPERSONA_HNSW_EF_SEARCH) holds in both kinds of tenant
    transaction, ``random_page_cost`` (CPERSONA_RANDOM_PAGE_COST) in those that plan per
    call, and both end with them (set per transaction: safe behind a transaction pooler)."""
    db = await Database(
        database_url, pooler=pooling.db_pooler(), planning=Planning(150, 1.5)
    ).open()
    try:
        tenant = TenantId((await tenants.create_tenant(db, "breadth")).id)
        async with db.admin_conn() as conn:
            server = await conn.fetchval("SELECT current_setting('random_page_cost')")
        async with db.tenant_tx(tenant) as conn:
            assert tuple(await conn.fetchrow(COSTS) or ()) == ("150", "1.5")
        async with db.tenant_tx(tenant, cached_plans=True) as conn:
            # keyed statements' cached plans are left to the server's page costs
            assert tuple(await conn.fetchrow(COSTS) or ()) == ("150", server)
        async with db.admin_conn() as conn:
            assert tuple(await conn.fetchrow(COSTS) or ())[1] == server
    finally:
        await db.close()


def test_the_database_defaults_are_the_settings_defaults() -> None:
    from service.config import load_settings

    defaults, settings = Database("postgresql://unused"), load_settings({})
    assert defaults.planning.hnsw_ef_search == settings.hnsw_ef_search
    assert defaults.planning.random_page_cost == settings.random_page_cost
