"""Long supersession chains (docs/tools.md, "Facts that change"): the cycle check walks at
most ``supersession.MAX_WALK`` successors, one index probe each, and never recurses in
Python; a declaration past the bound is dropped, never half-written."""

from __future__ import annotations

import time
import uuid

from service.db import agents
from service.memory import associations, supersession, tenants
from service.memory.library import Library
from service.models import TenantId
from tests.seeds import link_chain

CHAIN = 10_000


async def _chain(lib: Library, tenant: TenantId, length: int) -> list[int]:
    """``length + 1`` memories of agent ``a``, each superseded by the next (bulk SQL: a
    fixture, not the path under test)."""
    async with lib.db.tenant_tx(tenant) as conn:
        agent = await agents.ensure_agent(conn, tenant, "a")
        rows = await conn.fetch(
            "INSERT INTO memories (tenant_id, agent_id, content) "
            "SELECT $1, $2, 'link ' || g FROM generate_series(0, $3::int) g RETURNING id",
            tenant,
            agent,
            length,
        )
        ids = sorted(int(row["id"]) for row in rows)
        await link_chain(conn, tenant, agent, ids)
    return ids


async def _supersede(
    lib: Library, tenant: TenantId, newer: int, older: int
) -> associations.Declared:
    relation = {"subject": f"mem:{newer}", "predicate": "supersedes", "object": f"mem:{older}"}
    decl = associations.Declaration(agent_id="a", associations={"relations": [relation]})
    return await associations.declare(lib, tenant, decl)


async def test_a_10000_long_chain_is_walked_within_the_bound(lib: Library) -> None:
    tenant = TenantId((await tenants.create_tenant(lib.db, f"c-{uuid.uuid4().hex[:8]}")).id)
    ids = await _chain(lib, tenant, CHAIN)
    started = time.monotonic()
    cycle = await _supersede(lib, tenant, ids[0], ids[-1])
    assert cycle.relations == []
    assert cycle.dropped[0].reason.startswith("would make a cycle")
    async with lib.db.tenant_tx(tenant) as conn:
        extra = await agents.ensure_agent(conn, tenant, "a")
        fresh = await conn.fetchval(
            "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, 'x') RETURNING id",
            tenant,
            extra,
        )
    beyond = await _supersede(lib, tenant, ids[0], int(fresh))
    assert beyond.relations == []
    assert beyond.dropped[0].reason == (
        f"the chain above mem:{ids[0]} is longer than {supersession.MAX_WALK} records"
    )
    head = await _supersede(lib, tenant, int(fresh), ids[-1])
    assert head.dropped == []
    assert time.monotonic() - started < 30
