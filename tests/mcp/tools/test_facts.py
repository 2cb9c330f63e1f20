"""Facts that change over MCP/HTTP (docs/tools.md, "Facts that change"): declaring
supersession, store's and archive_episode's ``supersedes``, ``update_memory(keep_history)``,
deletes that keep chains whole, and reading with ``valid_from``/``valid_to``,
``current_only`` and ``as_of``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.support import Agent, Served, new_tenant, text


async def _refused(client: Agent, tool: str, arguments: dict[str, Any], words: str) -> None:
    """The call changed nothing and said why (a tool error or ``ok: false``)."""
    result = await client.raw(tool, arguments)
    said = text(result)
    assert result.is_error or '"ok":false' in said, said
    assert words in said, said


async def _memory(client: Agent, content: str, agent: str = "a", **message: Any) -> int:
    stored = await client.call("store", agent_id=agent, message={"content": content, **message})
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _supersede(client: Agent, newer: str, older: str, agent: str = "a") -> Any:
    return await client.call(
        "declare_associations",
        agent_id=agent,
        associations={
            "relations": [{"subject": newer, "predicate": "supersedes", "object": older}]
        },
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
            "relations": [
                {"subject": f"mem:{new}", "predicate": "Supersedes", "object": f"mem:{old}"}
            ]
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
            {
                "item": "supersedes[0]",
                "reason": f"mem:{old} is already superseded by mem:{stored['id']}",
            }
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


async def test_update_with_keep_history_writes_a_new_record_that_supersedes(
    client: Agent,
) -> None:
    old = await _memory(client, "lives in Lisbon", timestamp="2026-01-01T00:00:00Z")
    updated = await client.call(
        "update_memory", memory_id=old, content="lives in Porto", agent_id="a", keep_history=True
    )
    assert updated["ok"] is True
    assert updated["updated_id"] == old
    new = updated["new_id"]
    fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{old}", f"mem:{new}"])
    older, newer = fetched["items"]
    assert older["content"] == "lives in Lisbon"
    assert older["superseded_by"] == f"mem:{new}"
    assert older["valid_from"] == "2026-01-01T00:00:00+00:00"
    assert older["valid_to"] == newer["valid_from"]
    assert newer["supersedes"] == [f"mem:{old}"]
    assert "superseded_by" not in newer
    await _refused(
        client,
        "update_memory",
        {"memory_id": old, "content": "lives in Faro", "agent_id": "a", "keep_history": True},
        f"already superseded by mem:{new}",
    )
    plain = await client.call("update_memory", memory_id=new, content="lives in Braga")
    assert plain == {"ok": True, "updated_id": new}


async def test_keep_history_is_refused_for_a_locked_memory_and_writes_nothing(
    client: Agent,
) -> None:
    old = await _memory(client, "locked fact")
    await client.call("lock_memory", memory_id=old)
    await _refused(
        client,
        "update_memory",
        {"memory_id": old, "content": "new", "keep_history": True},
        "locked",
    )
    listed = await client.call("list_memories", agent_id="a")
    assert [row["content"] for row in listed["memories"]] == ["locked fact"]


async def test_deleting_the_middle_of_a_chain_links_its_neighbours(client: Agent) -> None:
    a, b = await _memory(client, "v1"), await _memory(client, "v2")
    c = await _memory(client, "v3")
    await _supersede(client, f"mem:{b}", f"mem:{a}")
    await _supersede(client, f"mem:{c}", f"mem:{b}")
    deleted = await client.call("delete_memory", memory_id=b)
    assert deleted["deleted_id"] == b
    assert [(r["subject"], r["object"]) for r in deleted["relinked"]] == [(f"mem:{c}", f"mem:{a}")]
    fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{a}"])
    assert fetched["items"][0]["superseded_by"] == f"mem:{c}"
    episode = await client.call(
        "archive_episode", agent_id="a", summary="v4", supersedes=[f"mem:{c}"]
    )
    assert episode["supersedes"]["dropped"] == []
    end = await client.call("delete_memory", memory_id=c)
    assert [(r["subject"], r["object"]) for r in end["relinked"]] == [
        (f"ep:{episode['episode_id']}", f"mem:{a}")
    ]
    head = await client.call("delete_episode", episode_id=episode["episode_id"])
    assert "relinked" not in head
    fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{a}"])
    assert "superseded_by" not in fetched["items"][0]


async def test_as_of_reads_the_memory_as_it_stood_then(client: Agent) -> None:
    lisbon = await _memory(client, "I live in Lisbon", timestamp="2025-01-10T00:00:00Z")
    porto = await _memory(client, "I live in Porto", timestamp="2025-06-01T12:00:00+02:00")
    await client.call(
        "store", agent_id="a", message={"content": "I live in Porto now"}, supersedes=[]
    )
    await _supersede(client, f"mem:{porto}", f"mem:{lisbon}")

    async def refs(**reading: Any) -> list[str]:
        found = await client.call("recall", agent_id="a", query="live", limit=10, **reading)
        return [
            row["ref"]
            for row in found["messages"]
            if row["ref"] in (f"mem:{lisbon}", f"mem:{porto}")
        ]

    assert await refs(as_of="2025-03-01") == [f"mem:{lisbon}"]
    assert await refs(as_of="2025-06-01T10:00:00") == [f"mem:{porto}"]  # no zone = UTC
    assert await refs(as_of="2025-06-01T09:59:59") == [f"mem:{lisbon}"]
    assert await refs(as_of="2024-12-31") == []  # before the first memory
    assert await refs(as_of="2999-01-01") == [f"mem:{porto}"]  # the future: as known now
    assert await refs(current_only=True) == [f"mem:{porto}"]
    both = await refs()
    assert both.index(f"mem:{porto}") > both.index(f"mem:{lisbon}")  # best last
    for bad in ("yesterday", "2025-13-01", "2025-01-01T25:00", "0001-01-01T00:00+05:00"):
        await _refused(client, "recall", {"agent_id": "a", "query": "live", "as_of": bad}, "as_of")


async def test_a_superseded_record_never_ranks_above_its_successor(client: Agent) -> None:
    old = await _memory(client, "favourite colour: blue blue blue blue")
    new = await _memory(client, "favourite colour is now green")
    await _supersede(client, f"mem:{new}", f"mem:{old}")
    found = await client.call("recall", agent_id="a", query="favourite colour blue")
    refs = [row["ref"] for row in found["messages"]]
    assert refs.index(f"mem:{new}") > refs.index(f"mem:{old}")  # the last is the best
    rows = {row["ref"]: row for row in found["messages"]}
    assert rows[f"mem:{old}"]["superseded_by"] == f"mem:{new}"
    assert rows[f"mem:{new}"]["supersedes"] == [f"mem:{old}"]


async def _successor(client: Agent, agent: str, content: str) -> str | None:
    listed = await client.call("list_memories", agent_id=agent)
    ref = next(f"mem:{r['id']}" for r in listed["memories"] if r["content"] == content)
    fetched = await client.call("get_contents", agent_id=agent, refs=[ref])
    successor = fetched["items"][0].get("superseded_by")
    if successor is None:
        return None
    item = await client.call("get_contents", agent_id=agent, refs=[successor])
    return str(item["items"][0]["content"])


async def test_merge_carries_a_supersession_and_skips_one_the_target_refuses(
    client: Agent,
) -> None:
    old = await _memory(client, "lives in Lisbon", agent="src")
    await client.call(
        "store", agent_id="src", message={"content": "lives in Porto"}, supersedes=[f"mem:{old}"]
    )
    copy = await _memory(client, "lives in Lisbon", agent="dst")
    await client.call(
        "store", agent_id="dst", message={"content": "lives in Faro"}, supersedes=[f"mem:{copy}"]
    )
    merged = await client.call("merge_memories", source_agent_id="src", target_agent_id="dst")
    assert merged["ok"] is True, merged
    assert await _successor(client, "dst", "lives in Lisbon") == "lives in Faro"
    assert await _successor(client, "src", "lives in Lisbon") == "lives in Porto"
    other = await client.call("merge_memories", source_agent_id="src", target_agent_id="new")
    assert other["ok"] is True, other
    assert await _successor(client, "new", "lives in Lisbon") == "lives in Porto"


async def test_the_supersession_health_check_finds_and_repairs_broken_chains(
    client: Agent, lib: Library
) -> None:
    a, b = await _memory(client, "v1"), await _memory(client, "v2")
    late = await _memory(client, "v0", timestamp="2000-01-01T00:00:00Z")
    await _supersede(client, f"mem:{b}", f"mem:{a}")
    await _supersede(client, f"mem:{late}", f"mem:{b}")  # a successor dated before it
    clean = await client.call("check_health", checks=["supersession"])
    found = [i for i in clean["issues"] if i["check"] == "supersession"]
    assert found[0]["cycles"] == 0
    assert found[0]["out_of_order"] == 1
    # a cycle written past the declaration rules (as a hand edit or a repair could)
    tenant = TenantId(next(t.id for t in await tenants.list_tenants(lib.db) if t.slug == "acme"))
    async with lib.db.tenant_tx(tenant) as conn:
        await conn.execute(
            "INSERT INTO relations (tenant_id, agent_id, subject_kind, subject_id, predicate,"
            " object_kind, object_id) SELECT tenant_id, agent_id, 'mem', $2, 'supersedes',"
            " 'mem', $3 FROM memories WHERE tenant_id = $1 AND id = $2",
            tenant,
            a,
            late,
        )
    broken = await client.call("check_health", checks=["supersession"])
    issue = next(i for i in broken["issues"] if i["check"] == "supersession")
    assert issue["cycles"] == 1
    assert sorted(issue["cycle_refs"][0]) == sorted([f"mem:{a}", f"mem:{b}", f"mem:{late}"])
    assert issue["repairable"] == 1
    fixed = await client.call("check_health", checks=["supersession"], fix=True)
    repaired = next(i for i in fixed["issues"] if i["check"] == "supersession")
    assert repaired["fixed"] == repaired["deleted"] == 1
    after = await client.call("check_health", checks=["supersession"])
    left = next(i for i in after["issues"] if i["check"] == "supersession")
    assert left["cycles"] == 0
    assert left["out_of_order"] == 1


async def test_traverse_as_of_leaves_out_relations_declared_after_it(client: Agent) -> None:
    def relation(obj: str) -> dict[str, Any]:
        return {"relations": [{"subject": "Ana", "predicate": "lives in", "object": obj}]}

    await client.call("declare_associations", agent_id="a", associations=relation("Lisbon"))
    between = datetime.now(UTC).isoformat()
    await client.call("declare_associations", agent_id="a", associations=relation("Porto"))
    then = await client.call("traverse", agent_id="a", entity="Ana", as_of=between)
    now = await client.call("traverse", agent_id="a", entity="Ana")
    assert sorted(e["name"] for e in then["entities"]) == ["Ana", "Lisbon"]
    assert sorted(e["name"] for e in now["entities"]) == ["Ana", "Lisbon", "Porto"]
    before = await client.call("traverse", agent_id="a", entity="Ana", as_of="2000-01-01")
    assert [e["name"] for e in before["entities"]] == ["Ana"]
    await _refused(client, "traverse", {"agent_id": "a", "entity": "Ana", "as_of": "x"}, "as_of")


async def test_list_memories_reads_as_of_and_current_only(client: Agent) -> None:
    lisbon = await _memory(client, "in Lisbon", timestamp="2025-01-10T00:00:00Z")
    porto = await _memory(client, "in Porto", timestamp="2025-06-01T00:00:00Z")
    await _memory(client, "likes tea", timestamp="2024-01-01T00:00:00Z")
    await _supersede(client, f"mem:{porto}", f"mem:{lisbon}")
    episode = await client.call(
        "archive_episode",
        agent_id="a",
        summary="moved to Faro",
        history=[{"role": "user", "content": "x", "timestamp": "2025-09-01T00:00:00Z"}],
        supersedes=[f"mem:{porto}"],
    )
    assert episode["supersedes"]["dropped"] == []

    async def listed(**reading: Any) -> list[str]:
        found = await client.call("list_memories", agent_id="a", **reading)
        return [row["content"] for row in found["memories"]]

    assert await listed(as_of="2025-03-01") == ["likes tea", "in Lisbon"]  # newest stored first
    assert await listed(as_of="2025-07-01") == ["likes tea", "in Porto"]
    assert await listed(as_of="2025-10-01") == ["likes tea"]  # Porto superseded by the episode
    assert await listed(as_of="2023-01-01") == []
    assert await listed(current_only=True) == ["likes tea"]
    assert len(await listed()) == 3
    await _refused(client, "list_memories", {"agent_id": "", "as_of": "2025-01-01"}, "agent_id")


async def test_export_import_keeps_a_chain_and_delete_agent_data_takes_it(client: Agent) -> None:
    v1 = await _memory(client, "v1", timestamp="2025-01-01T00:00:00Z")
    v2 = await client.call(
        "store",
        agent_id="a",
        message={"content": "v2", "timestamp": "2025-02-01T00:00:00Z"},
        supersedes=[f"mem:{v1}"],
    )
    await client.call("archive_episode", agent_id="a", summary="v3", supersedes=[f"mem:{v2['id']}"])
    exported = await client.call("export_memories", agent_id="a", output_path="chain.jsonl")
    assert exported["ok"] is True, exported
    imported = await client.call("import_memories", input_path="chain.jsonl", target_agent_id="b")
    assert imported["ok"] is True, imported
    assert await _successor(client, "b", "v1") == "v2"
    assert await _successor(client, "b", "v2") == "[Episode] v3"
    again = await client.call("import_memories", input_path="chain.jsonl", target_agent_id="b")
    assert again["ok"] is True, again  # the same supersessions again: repeats, not failures
    assert await _successor(client, "b", "v1") == "v2"
    deleted = await client.call("delete_agent_data", agent_id="b")
    assert deleted["ok"] is True
    assert await client.call("list_memories", agent_id="b", current_only=True) == {
        "memories": [],
        "count": 0,
    }
    assert await _successor(client, "a", "v1") == "v2"


async def test_another_tenants_records_cannot_be_superseded_or_read_through_a_chain(
    client: Agent, lib: Library, served: Served
) -> None:
    theirs = await _memory(client, "acme's fact")
    other = Agent(served, await new_tenant(lib, "other"))
    mine = await _memory(other, "other's fact")
    stored = await other.call(
        "store", agent_id="a", message={"content": "replacing"}, supersedes=[f"mem:{theirs}"]
    )
    assert stored["supersedes"]["dropped"] == [
        {"item": "supersedes[0]", "reason": f"mem:{theirs} is not a record of this agent"}
    ]
    declared = await _supersede(other, f"mem:{mine}", f"mem:{theirs}")
    assert declared["relations"] == []
    fetched = await client.call("get_contents", agent_id="a", refs=[f"mem:{theirs}"])
    assert "superseded_by" not in fetched["items"][0]
