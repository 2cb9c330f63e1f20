"""The pool keeps every named query, the recall statement included, prepared per connection.

asyncpg caches prepared statements only up to ``max_cacheable_statement_size``; its default
(15 KiB) left the recall statement out, so every recall parsed it again (an extra round
trip, and Postgres's parse, analysis and rewrite of thirty-odd CTEs).
"""

from __future__ import annotations

import pytest

from service.db import recall as store, sql
from service.db.pool import MAX_CACHED_STATEMENT_CHARS, Database
from service.memory import tenants
from service.models import TenantId
from tests.servers import pooling


def test_every_named_query_fits_the_statement_cache() -> None:
    longest = max(sql.QUERIES, key=lambda name: len(sql.QUERIES[name]))
    assert len(sql.QUERIES[longest]) <= MAX_CACHED_STATEMENT_CHARS, longest


async def test_a_repeated_recall_statement_is_prepared_once_per_connection(db: Database) -> None:
    if pooling.db_pooler() == "pgbouncer":
        pytest.skip("behind a transaction pooler the statement cache is off by design")
    tenant = TenantId((await tenants.create_tenant(db, "cached")).id)
    scope = store.Scope("agent", None, "", None)
    wanted = store.Retrieval(
        vector=None, tsquery="'tea'", lexemes=["tea"], patterns=[], limit=10,
        episodes=True, recency=False, query="tea",
    )  # fmt: skip
    statement = sql.QUERIES["recall_candidates_384"]
    async with db.tenant_tx(tenant) as conn:
        for _ in range(3):
            await store.recall_candidates(conn, tenant, scope, wanted)
        prepared = await conn.fetch(
            "SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements"
            " WHERE statement = $1",
            statement,
        )
    assert [row["runs"] for row in prepared] == [3]
