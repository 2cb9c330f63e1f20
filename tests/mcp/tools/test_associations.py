"""The declared graph over MCP/HTTP (docs/tools.md, "declare_associations", "traverse",
store's ``associations`` rider): CPersona 2.6's acceptance behaviours 25-34 and the bad
inputs and bounds around them."""

from __future__ import annotations

from typing import Any

from service.memory.library import Library
from tests.support import Agent, Served, new_tenant


async def _memory(client: Agent, content: str, agent: str = "a", **extra: Any) -> int:
    stored = await client.call("store", agent_id=agent, message={"content": content}, **extra)
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _declare(client: Agent, agent: str = "a", **arguments: Any) -> Any:
    return await client.call("declare_associations", agent_id=agent, **arguments)


async def test_nothing_declared_is_an_empty_success(client: Agent) -> None:
    assert await _declare(client) == {
        "ok": True,
        "result": "declared",
        "entities": [],
        "mentions": 0,
        "relations": [],
        "dropped": [],
    }


async def test_25_the_store_rider_mentions_and_traverse_finds_through_an_alias(
    client: Agent,
) -> None:
    stored = await client.call(
        "store",
        agent_id="a",
        message={"content": "X is great"},
        associations={"entities": [{"name": "X", "aliases": ["y"]}]},
    )
    assert stored["result"] == "stored"
    rider = stored["associations"]
    assert rider["entities"][0]["created"] is True
    assert rider["mentions"] == 1
    assert set(rider) == {"entities", "mentions", "relations", "dropped"}
    walked = await client.call("traverse", agent_id="a", entity="Y")
    assert walked["entities"] == [
        {
            "id": rider["entities"][0]["id"],
            "name": "X",
            "hops": 0,
            "aliases": ["y"],
            "mentions": [f"mem:{stored['id']}"],
        }
    ]


async def test_an_empty_rider_adds_no_key_and_a_skipped_store_still_declares(
    client: Agent,
) -> None:
    first = await client.call("store", agent_id="a", message={"content": "c"}, associations={})
    assert "associations" not in first
    again = await client.call(
        "store", agent_id="a", message={"content": "c"}, associations={"entities": [{"name": "E"}]}
    )
    assert again["result"] == "skipped"
    assert again["associations"]["mentions"] == 1
    walked = await client.call("traverse", agent_id="a", entity="e")
    assert walked["entities"][0]["mentions"] == [f"mem:{first['id']}"]


async def test_26_an_empty_endpoint_is_dropped_and_the_memory_is_stored(client: Agent) -> None:
    stored = await client.call(
        "store",
        agent_id="a",
        message={"content": "m"},
        associations={"relations": [{"subject": "", "predicate": "uses", "object": "B"}]},
    )
    assert stored["result"] == "stored"
    assert stored["associations"]["dropped"] == [
        {
            "item": "relations[0].subject",
            "reason": "endpoint must be an entity name or a record ref",
        }
    ]
    assert stored["associations"]["relations"] == []


async def test_27_an_alias_naming_another_visible_entity_is_dropped(client: Agent) -> None:
    await _declare(client, associations={"entities": [{"name": "Alpha"}]})
    clash = await _declare(
        client, associations={"entities": [{"name": "Beta", "aliases": ["ALPHA"]}]}
    )
    assert clash["dropped"] == [
        {"item": "entities[0].aliases[0]", "reason": "already names another entity in this scope"}
    ]
    assert clash["entities"][0]["name"] == "Beta"


async def test_28_a_foreign_anchor_is_dropped_entities_still_created(client: Agent) -> None:
    foreign = await _memory(client, "bob's", agent="bob")
    for anchor in ("mem:424242", f"mem:{foreign}", "nonsense"):
        done = await _declare(client, anchor_ref=anchor, associations={"entities": [{"name": "Q"}]})
        assert done["dropped"] == [
            {"item": "anchor_ref", "reason": f"{anchor} is not a record of this agent"}
        ]
        assert done["mentions"] == 0
        assert len(done["entities"]) == 1


async def test_29_the_same_relation_twice_has_one_id(client: Agent) -> None:
    first = await _declare(
        client,
        associations={
            "relations": [{"subject": "Billing Service", "predicate": "Uses", "object": "Postgres"}]
        },
    )
    second = await _declare(
        client,
        associations={
            "relations": [
                {"subject": "billing  service", "predicate": " uses ", "object": "POSTGRES"}
            ]
        },
    )
    assert first["relations"] == second["relations"]
    assert len(first["relations"]) == 1
    walked = await client.call("traverse", agent_id="a", entity="postgres")
    assert walked["relations"][0]["predicate"] == "uses"


async def test_30_retraction_counts_own_ids_only_and_drops_malformed_mentions(
    client: Agent,
) -> None:
    memory = await _memory(client, "anchor")
    mine = await _declare(
        client,
        anchor_ref=f"mem:{memory}",
        associations={
            "entities": [{"name": "E"}],
            "relations": [{"subject": "E", "predicate": "r", "object": "F"}],
        },
    )
    theirs = await _declare(
        client,
        agent="bob",
        associations={"relations": [{"subject": "G", "predicate": "r", "object": "H"}]},
    )
    entity = mine["entities"][0]["id"]
    done = await _declare(
        client,
        retract={
            "relations": [mine["relations"][0], theirs["relations"][0], 999999],
            "mentions": [
                {"entity": entity, "ref": f"mem:{memory}"},
                {"entity": entity, "ref": "bogus"},
            ],
        },
    )
    assert done["retracted"] == {"relations": 1, "mentions": 1}
    assert done["dropped"] == [
        {"item": "retract.mentions[1]", "reason": "needs an integer entity and a record ref"}
    ]
    walked = await client.call("traverse", agent_id="bob", entity="G")
    assert len(walked["relations"]) == 1


async def test_a_non_integer_retract_entity_is_a_schema_error(client: Agent) -> None:
    result = await client.raw(
        "declare_associations",
        {"agent_id": "a", "retract": {"mentions": [{"entity": "one", "ref": "mem:1"}]}},
    )
    assert result.is_error


async def test_31_deleting_the_anchor_removes_its_relations_and_mentions(client: Agent) -> None:
    memory = await _memory(client, "anchor")
    episode = (await client.call("archive_episode", agent_id="a", summary="s"))["episode_id"]
    await _declare(
        client,
        anchor_ref=f"mem:{memory}",
        associations={
            "entities": [{"name": "E"}],
            "relations": [{"subject": "E", "predicate": "r", "object": "F"}],
        },
    )
    await _declare(
        client,
        anchor_ref=f"ep:{episode}",
        associations={"relations": [{"subject": "E", "predicate": "s", "object": f"ep:{episode}"}]},
    )
    assert await client.call("delete_memory", memory_id=memory) == {
        "ok": True,
        "deleted_id": memory,
    }
    walked = await client.call("traverse", agent_id="a", entity="E")
    assert walked["relations"] == []
    assert walked["entities"] == [{"id": walked["entities"][0]["id"], "name": "E", "hops": 0}]
    await client.call("delete_episode", episode_id=episode)
    # the relation whose object and anchor was the episode went with it: re-declaring makes a new id
    again = await _declare(
        client, associations={"relations": [{"subject": "E", "predicate": "r", "object": "F"}]}
    )
    assert again["dropped"] == []


async def test_32_max_hops_zero_returns_the_start_and_says_max_hops(client: Agent) -> None:
    await _declare(
        client, associations={"relations": [{"subject": "A", "predicate": "r", "object": "B"}]}
    )
    walked = await client.call("traverse", agent_id="a", entity="A", max_hops=0)
    assert [e["name"] for e in walked["entities"]] == ["A"]
    assert walked["relations"] == []
    assert walked["bounds"] == {"omitted": ["max_hops"]}


async def test_33_project_scope_of_an_entity(client: Agent) -> None:
    memory = await _memory(client, "global memory")
    await _declare(
        client,
        project_id="P",
        anchor_ref=f"mem:{memory}",
        associations={"entities": [{"name": "Proj"}]},
    )
    assert (await client.call("traverse", agent_id="a", entity="proj"))["entities"]
    in_p = await client.call("traverse", agent_id="a", entity="proj", project_id="P")
    assert in_p["entities"][0]["mentions"] == [f"mem:{memory}"]
    for project in ("", "Q"):
        other = await client.call("traverse", agent_id="a", entity="proj", project_id=project)
        assert other == {
            "entity": "proj",
            "max_hops": 1,
            "limit": 20,
            "entities": [],
            "relations": [],
            "reason": "no_such_entity",
        }


async def test_34_a_paused_declaration_writes_nothing(client: Agent) -> None:
    await client.call("pause_persistence", ttl_seconds=60)
    paused = await _declare(client, associations={"entities": [{"name": "E"}]})
    assert paused["result"] == "skipped"
    assert paused["persisted"] is False
    assert paused["dry_run"] is True
    assert paused["entities"] == []
    stored = await client.call(
        "store", agent_id="a", message={"content": "c"}, associations={"entities": [{"name": "E"}]}
    )
    assert stored["persisted"] is False
    assert "associations" not in stored  # the rider does not run for a paused store
    await client.call("resume_persistence")
    assert (await client.call("traverse", agent_id="a", entity="E"))["reason"] == "no_such_entity"


async def test_traverse_walks_both_directions_in_hop_and_recency_order(client: Agent) -> None:
    pg = await _memory(client, "postgres")
    aurora = await _memory(client, "aurora")
    await _declare(
        client,
        anchor_ref=f"mem:{pg}",
        associations={
            "entities": [
                {"name": "Billing Service", "aliases": ["billing", "BillSvc"]},
                {"name": "Postgres", "aliases": ["PostgreSQL"]},
            ],
            "relations": [
                {"subject": "Billing Service", "predicate": "uses", "object": "Postgres"}
            ],
        },
    )
    await _declare(
        client,
        anchor_ref=f"mem:{aurora}",
        associations={
            "entities": [{"name": "Aurora"}, {"name": "billing"}],
            "relations": [{"subject": "Aurora", "predicate": "Is A", "object": "postgresql"}],
        },
    )
    walked = await client.call("traverse", agent_id="a", entity="PostgreSQL", max_hops=2)
    names = [(e["name"], e["hops"]) for e in walked["entities"]]
    assert names == [("Postgres", 0), ("Aurora", 1), ("Billing Service", 1)]
    assert walked["entities"][2]["aliases"] == ["billing", "BillSvc"]
    assert walked["entities"][2]["mentions"] == [f"mem:{pg}", f"mem:{aurora}"]
    assert [r["predicate"] for r in walked["relations"]] == ["is a", "uses"]
    assert walked["relations"][0]["anchor_ref"] == f"mem:{aurora}"
    assert walked["relations"][0]["declared_by"] == "agent"
    assert "bounds" not in walked
    assert "'postgres'" not in str(walked)  # refs only, never a record's text
    assert "'aurora'" not in str(walked)


async def test_traverse_limit_cuts_entities_and_mentions(client: Agent) -> None:
    refs = [await _memory(client, f"m{i}") for i in range(3)]
    for ref in refs:
        await _declare(
            client, anchor_ref=f"mem:{ref}", associations={"entities": [{"name": "Hub"}]}
        )
    spokes = [{"subject": "Hub", "predicate": "has", "object": f"S{i}"} for i in range(4)]
    await _declare(client, associations={"relations": spokes})
    walked = await client.call("traverse", agent_id="a", entity="hub", limit=2)
    assert len(walked["entities"]) == 2
    assert walked["entities_omitted"] == 3
    assert walked["entities"][0]["mentions"] == [f"mem:{refs[0]}", f"mem:{refs[1]}"]
    assert walked["entities"][0]["mentions_omitted"] == 1
    assert walked["bounds"] == {"omitted": ["limit"]}


async def test_bounds_drop_items_past_64_and_aliases_past_32(client: Agent) -> None:
    entities = [{"name": f"E{i}"} for i in range(66)]
    entities[0]["aliases"] = [f"a{j}" for j in range(33)]  # type: ignore[assignment]
    done = await _declare(client, associations={"entities": entities})
    assert len(done["entities"]) == 64
    assert done["dropped"] == [
        {"item": "entities[0].aliases[32]", "reason": "beyond the 32-alias bound"},
        {"item": "entities[64]", "reason": "beyond the 64-item bound"},
        {"item": "entities[65]", "reason": "beyond the 64-item bound"},
    ]


async def test_malformed_items_are_dropped_never_a_failed_call(client: Agent) -> None:
    memory = await _memory(client, "mine")
    done = await _declare(
        client,
        associations={
            "entities": [
                {"name": ""},
                {"nom": "x"},
                {"name": "n" * 300},
                {"name": "ok", "aliases": "zz"},
                7,
            ],
            "relations": [
                {"subject": "mem:99999", "predicate": "r", "object": "B"},
                {"subject": f"mem:{memory:05d}", "predicate": "", "object": "B"},
                {"subject": f"mem:{memory:05d}", "predicate": "cites", "object": "B"},
                "nope",
            ],
        },
    )
    assert done["ok"] is True
    name = "name must be a nonempty string"
    assert done["dropped"] == [  # CPersona 2.6's items and reasons, in its order
        {"item": "entities[0]", "reason": name},
        {"item": "entities[1]", "reason": name},
        {"item": "entities[2]", "reason": name},
        {"item": "entities[3].aliases", "reason": "must be a list"},
        {"item": "entities[4]", "reason": name},
        {"item": "relations[0].subject", "reason": "mem:99999 is not a record of this agent"},
        {"item": "relations[1]", "reason": "predicate must be a nonempty string"},
        {"item": "relations[3]", "reason": "must be an object"},
    ]
    assert len(done["relations"]) == 1
    assert [e["name"] for e in done["entities"]] == ["ok"]
    spaced = await _declare(client, associations={"entities": [{"name": "  Padded  "}]})
    assert spaced["entities"][0]["name"] == "Padded"  # as written, trimmed


async def test_traverse_schema_bounds(client: Agent) -> None:
    for arguments in ({"max_hops": 6}, {"limit": 101}, {"limit": 0}, {"max_hops": -1}):
        result = await client.raw("traverse", {"agent_id": "a", "entity": "x", **arguments})
        assert result.is_error, arguments


async def test_delete_agent_data_removes_the_agents_graph(client: Agent) -> None:
    memory = await _memory(client, "anchor")
    await _declare(
        client,
        anchor_ref=f"mem:{memory}",
        associations={
            "entities": [{"name": "E", "aliases": ["e2"]}],
            "relations": [{"subject": "E", "predicate": "r", "object": "F"}],
        },
    )
    await _declare(client, agent="b", associations={"entities": [{"name": "E"}]})
    await client.call("delete_agent_data", agent_id="a")
    gone = await client.call("traverse", agent_id="a", entity="E")
    assert gone["reason"] == "no_such_entity"
    assert (await client.call("traverse", agent_id="b", entity="E"))["entities"]
    fresh = await _declare(client, associations={"entities": [{"name": "E"}]})
    assert fresh["entities"][0]["created"] is True


async def test_a_merge_carries_declarations_and_a_move_leaves_none_behind(
    client: Agent,
) -> None:
    memory = await _memory(client, "anchor", agent="src")
    await _declare(
        client,
        agent="src",
        anchor_ref=f"mem:{memory}",
        associations={
            "entities": [{"name": "E", "aliases": ["ee"]}],
            "relations": [{"subject": "E", "predicate": "r", "object": "F"}],
        },
    )
    await client.call("merge_memories", source_agent_id="src", target_agent_id="copy")
    copied = await client.call("traverse", agent_id="copy", entity="ee")
    (row,) = (await client.call("list_memories", agent_id="copy"))["memories"]
    assert [(e["name"], e.get("mentions")) for e in copied["entities"]] == [
        ("E", [f"mem:{row['id']}"]),
        ("F", None),
    ]
    assert copied["relations"][0]["anchor_ref"] == f"mem:{row['id']}"
    source = await client.call("traverse", agent_id="src", entity="E")
    assert len(source["relations"]) == 1  # a copy leaves the source as it was
    await client.call("merge_memories", source_agent_id="src", target_agent_id="dst", mode="move")
    moved = await client.call("traverse", agent_id="dst", entity="E")
    (row,) = (await client.call("list_memories", agent_id="dst"))["memories"]
    assert moved["entities"][0]["mentions"] == [f"mem:{row['id']}"]
    assert moved["relations"][0]["anchor_ref"] == f"mem:{row['id']}"
    gone = await client.call("traverse", agent_id="src", entity="E")
    assert gone["reason"] == "no_such_entity"


async def test_traverse_needs_read_and_declare_needs_read_write(
    lib: Library, served: Served
) -> None:
    reader = Agent(served, await new_tenant(lib, "acme", grants={"a": "read", "*": "none"}))
    denied = await reader.call("declare_associations", agent_id="a")
    assert denied["error"] == "permission_denied"
    assert denied["required"] == "read-write"
    walked = await reader.call("traverse", agent_id="a", entity="E")
    assert walked["reason"] == "no_such_entity"
    other = await reader.call("traverse", agent_id="b", entity="E")
    assert (other["error"], other["required"]) == ("permission_denied", "read")
