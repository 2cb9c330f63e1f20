"""reconstruct and facts that change, over MCP/HTTP (docs/tools.md, "reconstruct" and
"Facts that change"): ``as_of`` and ``current_only`` forwarded to the candidate recall and
applied to the relation walk, the current claim first, a superseded claim never before its
successor, declared ``contradicts`` conflicts, and the chain fields on claims."""

from __future__ import annotations

from typing import Any

from service.memory.library import Library
from tests.support import Agent, text


async def _memory(client: Agent, content: str, agent: str = "a", **message: Any) -> int:
    stored = await client.call("store", agent_id=agent, message={"content": content, **message})
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _relate(client: Agent, subject: str, predicate: str, obj: str) -> None:
    declared = await client.call(
        "declare_associations",
        agent_id="a",
        associations={"relations": [{"subject": subject, "predicate": predicate, "object": obj}]},
    )
    assert declared["dropped"] == [], declared


async def _reconstruct(client: Agent, query: str, **arguments: Any) -> Any:
    return await client.call("reconstruct", agent_id="a", query=query, **arguments)


def _claim_refs(answer: Any) -> list[list[str]]:
    return [[claim["ref"] for claim in item["claims"]] for item in answer["items"]]


def _all_refs(answer: Any) -> set[str]:
    return {ref for refs in _claim_refs(answer) for ref in refs}


async def test_as_of_and_current_only_read_the_memory_as_it_stood_then(client: Agent) -> None:
    lisbon = await _memory(client, "I live in Lisbon", timestamp="2025-01-10T00:00:00Z")
    porto = await _memory(client, "I live in Porto", timestamp="2025-06-01T12:00:00+02:00")
    await _relate(client, f"mem:{porto}", "supersedes", f"mem:{lisbon}")
    old, new = f"mem:{lisbon}", f"mem:{porto}"

    assert _all_refs(await _reconstruct(client, "live", as_of="2025-03-01")) == {old}
    assert _all_refs(await _reconstruct(client, "live", as_of="2025-06-01T10:00:00")) == {new}
    assert _all_refs(await _reconstruct(client, "live", as_of="2025-06-01T09:59:59")) == {old}
    before = await _reconstruct(client, "live", as_of="2024-12-31")
    assert before["items"] == []
    assert before["shortfall_reason"] == "no_relevant_evidence"
    assert _all_refs(await _reconstruct(client, "live", as_of="2999-01-01")) == {new}
    assert _all_refs(await _reconstruct(client, "live", current_only=True)) == {new}
    (item,) = (await _reconstruct(client, "live"))["items"]
    assert item["head_ref"] == new
    assert [c["ref"] for c in item["claims"]] == [new, old]


async def test_a_superseded_claim_never_comes_before_its_successor(client: Agent) -> None:
    old = await _memory(client, "colour blue blue blue", timestamp="2026-03-02T00:00:00Z")
    # backdated: the successor's own time is older than the record it replaces
    new = await _memory(client, "colour is now green", timestamp="2026-03-01T00:00:00Z")
    await _relate(client, f"mem:{new}", "supersedes", f"mem:{old}")
    (item,) = (await _reconstruct(client, "colour blue"))["items"]
    assert item["head_ref"] == f"mem:{new}"  # the current claim, though the old one ranks first
    assert item["content"] == "colour is now green"
    current, superseded = item["claims"]
    assert current == {
        "ref": f"mem:{new}",
        "as_of": "2026-03-01T00:00:00Z",
        "why": current["why"],
        "supersedes": [f"mem:{old}"],
    }
    assert superseded["ref"] == f"mem:{old}"
    assert superseded["superseded_by"] == f"mem:{new}"
    assert superseded["valid_to"] == "2026-03-01T00:00:00+00:00"
    assert superseded["roles"] == [{"ref": f"mem:{new}", "role": "supersedes"}]


async def test_the_current_claim_comes_first_in_a_chain_of_three(client: Agent) -> None:
    one = await _memory(client, "plan: ship in May", timestamp="2026-01-01T00:00:00Z")
    two = await _memory(client, "plan: ship in June", timestamp="2026-02-01T00:00:00Z")
    three = await _memory(client, "plan: ship in April", timestamp="2025-12-01T00:00:00Z")
    await _relate(client, f"mem:{two}", "supersedes", f"mem:{one}")
    await _relate(client, f"mem:{three}", "supersedes", f"mem:{two}")
    (item,) = (await _reconstruct(client, "plan ship"))["items"]
    assert item["head_ref"] == f"mem:{three}"
    assert [c["ref"] for c in item["claims"]] == [f"mem:{three}", f"mem:{two}", f"mem:{one}"]


async def test_declared_contradicts_between_current_claims_is_a_conflict(
    client: Agent, lib: Library
) -> None:
    a = await _memory(client, "the api timeout is 30 seconds", timestamp="2026-03-01T00:00:00Z")
    b = await _memory(client, "the api timeout is 60 seconds", timestamp="2026-03-02T00:00:00Z")
    await _relate(client, f"mem:{b}", "contradicts", f"mem:{a}")
    (item,) = (await _reconstruct(client, "api timeout"))["items"]
    assert item["conflicts"] == [
        {"refs": sorted([f"mem:{a}", f"mem:{b}"]), "reason": "declared_contradicts"}
    ]
    c = await _memory(client, "the api timeout is 45 seconds", timestamp="2026-03-03T00:00:00Z")
    await _relate(client, f"mem:{c}", "supersedes", f"mem:{a}")
    (item,) = (await _reconstruct(client, "api timeout"))["items"]
    assert "conflicts" not in item  # mem:a is no longer current: nothing to reconcile
    then = await _reconstruct(client, "api timeout", as_of="2026-03-02T12:00:00Z")
    assert sorted(_claim_refs(then)) == sorted([[f"mem:{a}"], [f"mem:{b}"]])  # not seen yet
    async with lib.db.admin_tx() as conn:  # setup: the relation declared back then
        await conn.execute(
            "UPDATE relations SET declared_at = '2026-03-02T06:00:00Z' WHERE predicate = $1",
            "contradicts",
        )
    (item,) = (await _reconstruct(client, "api timeout", as_of="2026-03-02T12:00:00Z"))["items"]
    assert item["conflicts"][0]["reason"] == "declared_contradicts"


async def _walk_fixture(client: Agent, lib: Library) -> tuple[str, str, str]:
    """A mentions Ledger, B (2020) and C (2022) mention Aurora; Aurora -r-> Ledger, its
    declaration backdated to 2020-06-01 (setup through the database, not under test)."""
    one = await client.call(
        "store",
        agent_id="a",
        message={"content": "the ledger uses jsonb columns", "timestamp": "2020-01-01T00:00:00Z"},
        associations={"entities": [{"name": "Ledger"}]},
    )
    refs = [f"mem:{one['id']}"]
    for content, stamp in (("Aurora is the cluster", "2020-02-01"), ("Aurora moved", "2022-01-01")):
        stored = await client.call(
            "store",
            agent_id="a",
            message={"content": content, "timestamp": f"{stamp}T00:00:00Z"},
            associations={"entities": [{"name": "Aurora"}]},
        )
        refs.append(f"mem:{stored['id']}")
    await _relate(client, "Aurora", "r", "Ledger")
    async with lib.db.admin_tx() as conn:
        await conn.execute(
            "UPDATE relations SET declared_at = '2020-06-01T00:00:00Z' WHERE predicate = 'r'"
        )
    return refs[0], refs[1], refs[2]


async def test_the_relation_walk_reads_the_graph_and_records_as_of(
    client: Agent, lib: Library
) -> None:
    head, early, late = await _walk_fixture(client, lib)
    now = await _reconstruct(client, "jsonb")
    assert _claim_refs(now) == [[late, early, head]]  # newest first
    then = await _reconstruct(client, "jsonb", as_of="2021-01-01")
    assert _claim_refs(then) == [[early, head]]  # the 2022 record did not exist yet
    undeclared = await _reconstruct(client, "jsonb", as_of="2020-03-01")
    assert _claim_refs(undeclared) == [[head]]  # the relation was declared in June
    newer = await _memory(client, "Aurora was renamed", timestamp="2023-01-01T00:00:00Z")
    await _relate(client, f"mem:{newer}", "supersedes", late)
    current = await _reconstruct(client, "jsonb", current_only=True)
    assert late not in _all_refs(current)
    assert early in _all_refs(current)


async def test_a_malformed_as_of_is_refused_before_any_read(client: Agent) -> None:
    await _memory(client, "something")
    for bad in ("yesterday", "2025-13-01", "2025-01-01T25:00", "0001-01-01T00:00+05:00"):
        result = await client.raw("reconstruct", {"agent_id": "a", "query": "x", "as_of": bad})
        said = text(result)
        assert '"ok":false' in said, said
        assert "as_of" in said, said
