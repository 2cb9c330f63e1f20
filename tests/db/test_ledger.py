"""The session ledger's one statement (``sql/ledger.sql``) against a real Postgres."""

from __future__ import annotations

import random

from service.mcp.shaping.budget import admitted
from service.memory import ledger
from service.memory.ledger import Offered
from service.memory.library import Library
from tests.seeds import new_seed


def _offers(rng: random.Random, count: int, start: int = 1) -> list[Offered]:
    return [
        Offered(rng.choice(("mem", "ep")), start + i, rng.randint(1, 90), rng.randint(3, 6),
                rng.random() < 0.7)
        for i in range(count)
    ]  # fmt: skip


async def _rows(lib: Library) -> set[tuple[str, str, int]]:
    async with lib.db.admin_tx() as conn:
        records = await conn.fetch("SELECT session_key, kind, row_id FROM recall_ledger")
    return {(r["session_key"], r["kind"], r["row_id"]) for r in records}


async def test_the_statement_admits_and_records_exactly_what_the_budget_rule_admits(
    lib: Library,
) -> None:
    """The SQL walk and ``shaping.budget.admitted`` must never disagree: random offers,
    random held rows, random budgets, the recorded set checked against the Python rule."""
    seed = await new_seed(lib, "walk")
    rng = random.Random(13)
    for trial in range(40):
        session = f"walk-{trial}"
        offers = _offers(rng, rng.randint(1, 25))
        earlier = [o for o in offers if rng.random() < 0.3]
        await ledger.deliver(
            lib, seed.tenant_id, session,
            [Offered(o.kind, o.row_id, 1, 1, True) for o in earlier], budget=None, look_up=False,
        )  # fmt: skip
        budget = rng.choice([None, rng.randint(-5, 400)])
        exchange = await ledger.deliver(
            lib, seed.tenant_id, session, offers, budget=budget, look_up=True
        )
        held = {i for i, o in enumerate(offers) if o in earlier}
        assert exchange.held == held
        count = admitted([o.cost for o in offers], [o.stub_cost for o in offers], held, budget)
        expected = {(o.kind, o.row_id) for o in offers[:count] if o.whole} | {
            (o.kind, o.row_id) for o in earlier
        }
        recorded = {(k, r) for s, k, r in await _rows(lib) if s == session}
        assert recorded == expected, (trial, budget)


async def test_a_session_keeps_at_most_its_bound_and_other_sessions_are_untouched(
    lib: Library,
) -> None:
    seed = await new_seed(lib, "bound")
    rng = random.Random(5)
    other = [Offered("mem", 50_000 + i, 1, 1, True) for i in range(10)]
    await ledger.deliver(lib, seed.tenant_id, "other", other, budget=None, look_up=False)
    for batch in range(13):
        offers = [Offered("mem", batch * 100 + i + 1, 1, 1, True) for i in range(100)]
        rng.shuffle(offers)
        await ledger.deliver(lib, seed.tenant_id, "busy", offers, budget=None, look_up=False)
        rows = await _rows(lib)
        assert len({r for r in rows if r[0] == "busy"}) <= ledger.MAX_ROWS_PER_SESSION
    busy = {row_id for session, _, row_id in await _rows(lib) if session == "busy"}
    assert len(busy) == ledger.MAX_ROWS_PER_SESSION
    assert max(busy) == 1300  # the newest deliveries are kept
    assert len({r for r in await _rows(lib) if r[0] == "other"}) == 10


async def test_expired_rows_of_the_tenant_are_swept_by_its_next_exchange(lib: Library) -> None:
    seed = await new_seed(lib, "sweep")
    stale = [Offered("ep", i + 1, 1, 1, True) for i in range(30)]
    await ledger.deliver(lib, seed.tenant_id, "old", stale, budget=None, look_up=False)
    async with lib.db.admin_tx() as conn:
        await conn.execute("UPDATE recall_ledger SET expires_at = now() - interval '1 minute'")
    fresh = [Offered("mem", 7, 1, 1, True)]
    exchange = await ledger.deliver(lib, seed.tenant_id, "new", fresh, budget=None, look_up=True)
    assert exchange.swept == 30
    assert await _rows(lib) == {("new", "mem", 7)}
