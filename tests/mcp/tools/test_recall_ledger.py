"""No repeats within a session over MCP/HTTP (issue 13, point 4): the session ledger."""

from __future__ import annotations

import dataclasses
from typing import Any

from service.config import Settings
from service.memory import ledger, tenants
from service.memory.library import Library
from tests.seeds import Seed, new_seed
from tests.support import Agent, Served, SessionAgent, serve

LONG = "otter " + "river bank story " * 60


async def _tenant(lib: Library, slug: str = "ledger") -> tuple[Seed, str]:
    seed = await new_seed(lib, slug)
    return seed, await tenants.create_key(lib.db, slug, label="ledger")


async def _otters(seed: Seed, agent: str = "a") -> tuple[list[int], int]:
    """Three short otter notes and one long one (trimmed to a preview by recall)."""
    short = [await seed.memory(f"otter note {i}", agent=agent) for i in range(3)]
    return short, await seed.memory(LONG, agent=agent)


async def _recall(client: Agent, **args: Any) -> list[dict[str, Any]]:
    body = await client.call("recall", agent_id="a", query="otter", deep=True, **args)
    rows: list[dict[str, Any]] = body["messages"]
    return rows


def _stored(key: str, session: str) -> str:
    """The stored ledger session of ``key``'s session ``session`` (the key's own)."""
    return ledger.session_of(f"key:{key[: tenants.PREFIX_LENGTH]}", session)


def _stubs(rows: list[dict[str, Any]]) -> set[str]:
    return {row["ref"] for row in rows if row.get("seen")}


async def _ledger(lib: Library) -> set[tuple[str, str]]:
    async with lib.db.admin_tx() as conn:
        rows = await conn.fetch("SELECT session_key, kind, row_id FROM recall_ledger")
    return {(r["session_key"], f"{r['kind']}:{r['row_id']}") for r in rows}


async def test_novel_only_sends_rows_already_delivered_whole_as_seen_stubs(
    lib: Library, served: Served
) -> None:
    seed, key = await _tenant(lib)
    short, long_id = await _otters(seed)
    client = Agent(served, key)
    first = await _recall(client, novel_only=True)
    assert len(first) == 4
    assert not _stubs(first)
    second = await _recall(client, novel_only=True)
    assert _stubs(second) == {f"mem:{i}" for i in short}
    assert all(row == {"ref": row["ref"], "seen": True} for row in second if row.get("seen"))
    (long_row,) = [row for row in second if not row.get("seen")]
    assert long_row["ref"] == f"mem:{long_id}"  # a preview is not a whole delivery
    assert long_row["content_truncated"] is True
    assert [row["ref"] for row in second] == [row["ref"] for row in first]  # same places
    assert not _stubs(await _recall(client))  # without novel_only nothing is held back


async def test_without_a_session_header_each_key_is_its_own_session(
    lib: Library, served: Served
) -> None:
    seed, key = await _tenant(lib)
    await _otters(seed)
    await _recall(Agent(served, key), novel_only=True)
    other_key = await tenants.create_key(lib.db, "ledger", label="other")
    assert not _stubs(await _recall(Agent(served, other_key), novel_only=True))
    assert len(_stubs(await _recall(Agent(served, key), novel_only=True))) == 3


async def test_the_session_ledger_holds_across_two_replicas_of_one_database(
    lib: Library, settings: Settings, database_url: str
) -> None:
    seed, key = await _tenant(lib)
    short, _ = await _otters(seed)
    dedup = dataclasses.replace(settings, session_dedup=True)
    async with serve(dedup, database_url) as one, serve(dedup, database_url) as two:
        assert one.base_url != two.base_url
        first = await _recall(SessionAgent(one, key, "s-1"))
        assert not _stubs(first)
        assert _stubs(await _recall(SessionAgent(two, key, "s-1"))) == {f"mem:{i}" for i in short}
        assert not _stubs(await _recall(SessionAgent(two, key, "s-2")))
        assert not _stubs(await _recall(SessionAgent(two, key, "s-1"), novel_only=False))
        assert not _stubs(await _recall(Agent(two, key)))  # no header: no session
    whole = {(_stored(key, session), f"mem:{i}") for session in ("s-1", "s-2") for i in short}
    assert await _ledger(lib) == whole


async def test_rows_fetched_with_get_contents_count_as_delivered_whole(
    lib: Library, settings: Settings, database_url: str
) -> None:
    seed, key = await _tenant(lib)
    _, long_id = await _otters(seed)
    async with serve(dataclasses.replace(settings, session_dedup=True), database_url) as served:
        client = SessionAgent(served, key, "reader")
        await _recall(client)
        fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{long_id}"])
        assert fetched["items"][0]["content"] == LONG
        assert _stubs(await _recall(client)) >= {f"mem:{long_id}"}


async def test_get_contents_records_for_novel_only_sessions_without_dedup(
    lib: Library, served: Served
) -> None:
    seed, key = await _tenant(lib)
    _, long_id = await _otters(seed)
    client = SessionAgent(served, key, "reader")
    await client.call("get_contents", agent_id="a", refs=[f"mem:{long_id}", "mem:999999"])
    assert _stubs(await _recall(client, novel_only=True)) == {f"mem:{long_id}"}
    assert not _stubs(await _recall(client))  # dedup is off: only novel_only stubs
    await Agent(served, key).call("get_contents", agent_id="a", refs=[f"mem:{long_id}"])
    stored = {session for session, _ in await _ledger(lib)}
    assert stored == {_stored(key, "reader")}  # no header: no record


async def test_a_delivery_is_forgotten_when_it_expires(lib: Library, served: Served) -> None:
    seed, key = await _tenant(lib)
    await _otters(seed)
    client = Agent(served, key)
    await _recall(client, novel_only=True)
    async with lib.db.admin_tx() as conn:
        await conn.execute("UPDATE recall_ledger SET expires_at = now() - interval '1 second'")
    again = await _recall(client, novel_only=True)
    assert not _stubs(again)
    assert len(await _ledger(lib)) == 3  # expired rows were refreshed, none duplicated


async def test_the_ledger_of_one_tenant_never_holds_rows_for_another(
    lib: Library, served: Served
) -> None:
    seed_a, key_a = await _tenant(lib, "la")
    seed_b, key_b = await _tenant(lib, "lb")
    await _otters(seed_a)
    await _otters(seed_b)
    await _recall(SessionAgent(served, key_a, "shared"), novel_only=True)
    assert not _stubs(await _recall(SessionAgent(served, key_b, "shared"), novel_only=True))
    async with lib.db.tenant_tx(seed_b.tenant_id) as conn:  # RLS: b sees only its own rows
        tenants_seen = await conn.fetch("SELECT DISTINCT tenant_id FROM recall_ledger")
    assert [r["tenant_id"] for r in tenants_seen] == [seed_b.tenant_id]


async def test_with_a_budget_stubs_make_room_and_the_ledger_records_what_was_sent(
    lib: Library, served: Served
) -> None:
    seed, key = await _tenant(lib)
    for i in range(12):
        await seed.memory(f"otter fact {i} " + "about whiskers " * 8)
    client = Agent(served, key)
    await _recall(client)  # the long advisory of embeddings-off mode comes once
    args = {"agent_id": "a", "query": "otter", "deep": True, "limit": 12, "novel_only": True}
    first = await client.call("recall", **args, max_tokens=250)
    delivered = {row["ref"] for row in first["messages"]}
    assert "next_cursor" in first
    assert 1 < len(delivered) < 12
    assert {ref for _, ref in await _ledger(lib)} == delivered
    second = (await client.call("recall", **args, max_tokens=250))["messages"]
    assert _stubs(second) == delivered  # held rows cost their stub only...
    assert len(second) > len(delivered)  # ...so more rows fit
    sent_whole = {row["ref"] for row in second if not row.get("seen")}
    assert {ref for _, ref in await _ledger(lib)} == delivered | sent_whole
