"""Migration 0019 on a populated database (docs/tools.md, "Facts that change"): a record
that relations of revision 0017 gave two successors keeps the earliest declaration, the
others are deleted, and the one-successor index holds from then on."""

from __future__ import annotations

import asyncpg
import pytest

from service.db import agents, migrate
from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId

MEMORY = "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, $3) RETURNING id"
SUPERSEDES = (
    "INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate,"
    " object_kind, object_id) VALUES ($1, $2, 'mem', $3, 'supersedes', 'mem', $4) RETURNING id"
)


async def test_two_successors_of_0017_become_one_and_the_index_holds(
    lib: Library, database_url: str
) -> None:
    migrate.downgrade(database_url, "0017")
    tenant = TenantId((await tenants.create_tenant(lib.db, "before-0019")).id)
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        old, first, second = [await conn.fetchval(MEMORY, tenant, agent, t) for t in "xyz"]
        kept = await conn.fetchval(SUPERSEDES, tenant, agent, first, old)
        await conn.fetchval(SUPERSEDES, tenant, agent, second, old)
        other = await conn.fetchval(SUPERSEDES, tenant, agent, second, first)
    migrate.upgrade(database_url)
    async with lib.db.tenant_tx(tenant) as conn:
        left = await conn.fetch("SELECT id FROM relations ORDER BY id")
        assert [row["id"] for row in left] == [kept, other]
        with pytest.raises(asyncpg.UniqueViolationError):
            await conn.fetchval(SUPERSEDES, tenant, agent, second, old)
