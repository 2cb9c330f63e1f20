"""Facts that change over MCP/HTTP (docs/tools.md, "Facts that change"): declaring
supersession, store's and archive_episode's ``supersedes``, ``update_memory(keep_history)``,
deletes that keep chains whole, and reading with ``valid_from``/``valid_to``,
``current_only`` and ``as_of``."""

from __future__ import annotations

from typing import Any

from tests.support import Agent


async def _memory(client: Agent, content: str, agent: str = "a", **message: Any) -> int:
    stored = await client.call(
        "store", agent_id=agent, message={"content": content, **message}
    )
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _supersede(client: Agent, newer: str, older: str, agent: str = "a") -> Any:
    return await client.call(
        "declare_associations",
        agent_id=agent,
        associations={"relations": [{"subject": newer, "predicate": "supersedes", "object": older}]},
    )


async def test_declaring_the_same_supersession_again_gives_the_same_id(client: Agent) -> None:
    old, new = await _memory(client, "lives in Lisbon"), await _memory(client, "lives in Porto")
    first = await _supersede(client, f"mem:{new}", f"mem:{old}")
    again = await _supersede(client, f"mem:{new}", f"mem:{old}")
    anchored = await client.call(
        "declare_associations",
        agent_id="a",
        anchor_ref=f"mem:{new}",
        associations={
            "relations": [{"subject": f"mem:{new}", "predicate": "Supersedes", "object": f"mem:{old}"}]
        },
    )
    assert first["dropped"] == []
    assert first["relations"] == again["relations"] == anchored["relations"]


async def test_self_cycle_foreign_missing_and_second_successor_are_dropped(client: Agent) -> None:
    a, b, c = [await _memory(client, text) for text in ("a", "b", "c")]
    foreign = await _memory(client, "bob's", agent="bob")
    assert (await _supersede(client, f"mem:{b}", f"mem:{a}"))["dropped"] == []
    assert (await _supersede(client, f"mem:{c}", f"mem:{b}"))["dropped"] == []
    cases = {
        (f"mem:{a}", f"mem:{a}"): "a record cannot supersede itself",
        (f"mem:{a}", f"mem:{c}"): f"would make a cycle: mem:{a} is already superseded through"
        f" mem:{c}",
        (f"mem:{c}", f"mem:{a}"): f"mem:{a} is already superseded by mem:{b}",
    }
    for (newer, older), reason in cases.items():
        done = await _supersede(client, newer, older)
        assert done["relations"] == []
        assert done["dropped"] == [{"item": "relations[0]", "reason": reason}]
    for older in (f"mem:{foreign}", "mem:999999"):
        done = await _supersede(client, f"mem:{c}", older)
        assert done["dropped"] == [
            {"item": "relations[0].object", "reason": f"{older} is not a record of this agent"}
        ]


async def test_retracting_restores_the_older_record_as_current(client: Agent) -> None:
    old, new = await _memory(client, "lives in Lisbon"), await _memory(client, "lives in Porto")
    declared = await _supersede(client, f"mem:{new}", f"mem:{old}")
    current = await client.call("recall", agent_id="a", query="lives", current_only=True)
    assert [row["ref"] for row in current["messages"]] == [f"mem:{new}"]
    await client.call(
        "declare_associations", agent_id="a", retract={"relations": declared["relations"]}
    )
    current = await client.call("recall", agent_id="a", query="lives", current_only=True)
    assert {row["ref"] for row in current["messages"]} == {f"mem:{new}", f"mem:{old}"}
    # and the older one may now be superseded by another record
    other = await _memory(client, "lives in Faro")
    assert (await _supersede(client, f"mem:{other}", f"mem:{old}"))["dropped"] == []


async def test_store_and_archive_episode_take_a_supersedes_list(client: Agent) -> None:
    old = await _memory(client, "lives in Lisbon")
    foreign = await _memory(client, "bob's", agent="bob")
    stored = await client.call(
        "store",
        agent_id="a",
        message={"content": "lives in Porto"},
        supersedes=[f"mem:{old}", f"mem:{foreign}", "nonsense"],
    )
    assert stored["result"] == "stored"
    assert len(stored["supersedes"]["relations"]) == 1
    assert stored["supersedes"]["dropped"] == [
        {"item": "supersedes[1]", "reason": f"mem:{foreign} is not a record of this agent"},
        {"item": "supersedes[2]", "reason": "nonsense is not a record of this agent"},
    ]
    archived = await client.call(
        "archive_episode", agent_id="a", summary="moved to Porto", supersedes=[f"mem:{old}"]
    )
    assert archived["supersedes"] == {
        "relations": [],
        "dropped": [
            {"item": "supersedes[0]", "reason": f"mem:{old} is already superseded by mem:{stored['id']}"}
        ],
    }
    plain = await client.call("store", agent_id="a", message={"content": "no list"})
    assert "supersedes" not in plain


async def test_a_100_ref_supersedes_list_declares_64_and_drops_the_rest(client: Agent) -> None:
    olds = [await _memory(client, f"fact {i}") for i in range(66)]
    refs = [f"mem:{i}" for i in olds] + ["mem:999999"] * 34
    stored = await client.call(
        "store", agent_id="a", message={"content": "the summary of all"}, supersedes=refs
    )
    assert len(stored["supersedes"]["relations"]) == 64
    assert [d["item"] for d in stored["supersedes"]["dropped"]] == [
        f"supersedes[{i}]" for i in range(64, 100)
    ]
    assert stored["supersedes"]["dropped"][0]["reason"] == "beyond the 64-item bound"
    too_many = await client.raw(
        "store", {"agent_id": "a", "message": {"content": "x"}, "supersedes": ["mem:1"] * 257}
    )
    assert too_many.is_error
