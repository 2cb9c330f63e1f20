"""The lexical channel's bounded top-up: a query of common words reads one posting list.

Rows holding the rarest query terms are scored while their postings fit the budget; when
they are too few, rows holding the next rarest term (the first beyond the budget) fill up
to the depth. The union of every common word's postings is never built: at 100k rows it
cost 40 ms for three common words, because a bitmap index scan builds its whole bitmap
before any LIMIT applies.
"""

from __future__ import annotations

from service.db import recall as recall_queries
from service.db.pool import Database
from service.memory import tenants
from service.memory.recall import query_terms
from service.models import TenantId


async def _agent_with(db: Database, texts: list[str]) -> TenantId:
    tenant = TenantId((await tenants.create_tenant(db, "topup")).id)
    async with db.admin_tx() as conn:
        agent = await conn.fetchval(
            "INSERT INTO agents (tenant_id, name) VALUES ($1, 'agent') RETURNING id", tenant
        )
        await conn.executemany(
            "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, $3)",
            [(tenant, agent, text) for text in texts],
        )
    return tenant


async def _text_hits(db: Database, tenant: TenantId, query: str, budget: int) -> list[str]:
    terms = query_terms.build(query)
    wanted = recall_queries.Retrieval(
        vector=None, tsquery=terms.tsquery, lexemes=terms.lexemes, patterns=terms.patterns,
        limit=10, episodes=False, recency=False, query=query, budget=budget,
    )  # fmt: skip
    async with db.tenant_tx(tenant) as conn:
        found = await recall_queries.recall_candidates(
            conn, tenant, recall_queries.Scope("agent", None, "", None), wanted
        )
    return sorted(hit.content for hit in found.hits if hit.channel == "memory_text")


ALPHAS = [f"alpha note {n}" for n in range(4)]
BETAS = [f"beta note {n}" for n in range(6)]


async def test_a_query_of_common_words_is_topped_up_from_its_rarest_word_only(
    db: Database,
) -> None:
    tenant = await _agent_with(db, ALPHAS + BETAS)
    # both words hold more rows than the budget of 2: none is rare, alpha is the rarer
    assert await _text_hits(db, tenant, "alpha beta", budget=2) == sorted(ALPHAS)


async def test_words_within_the_budget_are_all_scored(db: Database) -> None:
    tenant = await _agent_with(db, ALPHAS + BETAS)
    assert await _text_hits(db, tenant, "alpha beta", budget=100) == sorted(ALPHAS + BETAS)
