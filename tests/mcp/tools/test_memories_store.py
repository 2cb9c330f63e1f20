"""store over MCP/HTTP (docs/tools.md, "Store steps"; docs/tools.md, "Dedup scopes";
docs/tools.md, "Source normalisation") and acceptance behaviours 7-19."""

from __future__ import annotations

import asyncio
from typing import Any

from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, Served, new_tenant


async def _rows(client: Agent, agent: str = "a") -> list[dict[str, Any]]:
    listed = await client.call("list_memories", agent_id=agent, limit=500)
    rows: list[dict[str, Any]] = listed["memories"]
    return rows


async def test_first_store_is_stored_without_embedding(client: Agent) -> None:
    body = await client.call("store", agent_id="a", message={"content": "first fact"})
    assert body == {"ok": True, "result": "stored", "id": body["id"], "embedded": False}
    assert isinstance(body["id"], int)


async def test_known_msg_id_is_skipped_and_content_unchanged(client: Agent) -> None:
    first = await client.call("store", agent_id="a", message={"id": "m1", "content": "v1"})
    again = await client.call("store", agent_id="a", message={"id": "m1", "content": "v2"})
    assert again == {
        "ok": True,
        "result": "skipped",
        "reason": "duplicate msg_id",
        "id": first["id"],
    }
    assert [row["content"] for row in await _rows(client)] == ["v1"]


async def test_identical_content_is_skipped_with_the_first_id(client: Agent) -> None:
    first = await client.call("store", agent_id="a", message={"content": "same"})
    again = await client.call("store", agent_id="a", message={"content": "same"})
    assert again == {
        "ok": True,
        "result": "skipped",
        "reason": "duplicate content",
        "id": first["id"],
    }


async def test_empty_and_annotation_only_content_is_rejected(client: Agent) -> None:
    empty = await client.call("store", agent_id="a", message={"content": ""})
    absent = await client.call("store", agent_id="a", message={})
    annotation = await client.call(
        "store", agent_id="a", message={"content": "[Memory from bob]   \n "}
    )
    assert empty == {"ok": False, "result": "rejected", "reason": "empty content"}
    assert absent == empty
    assert annotation == {"ok": False, "result": "rejected", "reason": "empty after sanitization"}
    assert await _rows(client) == []


async def test_annotations_are_stripped(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "[Memory from x] tea is good"})
    assert [row["content"] for row in await _rows(client)] == ["tea is good"]


async def test_long_content_is_capped_at_16000(client: Agent) -> None:
    body = await client.call("store", agent_id="a", message={"content": "x" * 19_999 + "y"})
    assert body["result"] == "stored"
    assert body["truncated"] is True
    (row,) = await _rows(client)
    assert row["content"] == "x" * 16_000


async def test_oversized_metadata_and_source_are_refused(client: Agent) -> None:
    big = {"blob": "z" * 8_100}
    meta = await client.call("store", agent_id="a", message={"content": "c", "metadata": big})
    source = await client.call("store", agent_id="a", message={"content": "c", "source": big})
    assert meta["result"] == "rejected"
    assert meta["reason"].startswith("metadata too large (")
    assert meta["reason"].endswith(" chars, max 8000)")
    assert source["reason"].startswith("source too large (")
    assert await _rows(client) == []


async def test_project_dedup_scope(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "g"})
    into_x = await client.call("store", agent_id="a", project_id="X", message={"content": "g"})
    await client.call("store", agent_id="a", project_id="X", message={"content": "only-x"})
    into_global = await client.call("store", agent_id="a", message={"content": "only-x"})
    assert into_x["result"] == "skipped"
    assert into_global["result"] == "stored"


async def test_channel_dedup_scope(client: Agent) -> None:
    await client.call("store", agent_id="a", channel="discord", message={"content": "c1"})
    plain = await client.call("store", agent_id="a", message={"content": "c1"})
    await client.call("store", agent_id="a", message={"content": "c2"})
    in_discord = await client.call(
        "store", agent_id="a", channel="discord", message={"content": "c2"}
    )
    assert plain["result"] == "stored"
    assert in_discord["result"] == "skipped"


async def test_msg_id_ignores_channel_but_not_sibling_projects(client: Agent) -> None:
    await client.call("store", agent_id="a", channel="c1", message={"id": "m", "content": "1"})
    other_channel = await client.call(
        "store", agent_id="a", channel="c2", message={"id": "m", "content": "2"}
    )
    a = await client.call(
        "store", agent_id="a", project_id="proj-a", message={"id": "p", "content": "3"}
    )
    b = await client.call(
        "store", agent_id="a", project_id="proj-b", message={"id": "p", "content": "4"}
    )
    assert other_channel["reason"] == "duplicate msg_id"
    assert (a["result"], b["result"]) == ("stored", "stored")


async def test_source_is_normalised(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "s1", "source": {"User": "u1"}})
    await client.call(
        "store", agent_id="a", message={"content": "s2", "source": {"type": "assistant", "id": "x"}}
    )
    rows = {row["content"]: row["source"] for row in await _rows(client)}
    assert rows["s1"] == {"type": "User", "id": "u1", "name": "u1"}
    assert rows["s2"] == {"type": "Agent", "id": "x"}


async def test_default_timestamp_is_iso_utc_and_given_one_is_kept(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "t1"})
    await client.call("store", agent_id="a", message={"content": "t2", "timestamp": "yesterday"})
    rows = {row["content"]: row["timestamp"] for row in await _rows(client)}
    assert rows["t1"].endswith("+00:00")
    assert "T" in rows["t1"]
    assert rows["t2"] == "yesterday"


async def test_empty_agent_id_is_stored_under_the_empty_agent(client: Agent) -> None:
    body = await client.call("store", agent_id="", message={"content": "nobody"})
    assert body["result"] == "stored"
    assert [row["content"] for row in await _rows(client, "")] == ["nobody"]


async def test_concurrent_identical_stores_write_exactly_one_row(
    lib: Library, served: Served, settings: Settings
) -> None:
    agent = Agent(served, await new_tenant(lib, "race"))
    results = await asyncio.gather(
        *[agent.call("store", agent_id="a", message={"content": "race"}) for _ in range(16)]
    )
    rows = await _rows(agent)
    assert [r["result"] for r in results].count("stored") == 1
    assert all(r["ok"] for r in results)
    assert len(rows) == 1


async def test_concurrent_first_stores_of_a_new_agent_are_all_stored_under_it(
    lib: Library, served: Served
) -> None:
    """The store statement registers a new agent itself: concurrent first writes of one
    agent (each committing after the others' snapshots) all find it and are stored."""
    agent = Agent(served, await new_tenant(lib, "newcomer"))
    contents = [f"first fact number {n} of a new agent" for n in range(16)]
    results = await asyncio.gather(
        *[agent.call("store", agent_id="fresh", message={"content": c}) for c in contents]
    )
    assert [r["result"] for r in results] == ["stored"] * len(contents)
    assert sorted(row["content"] for row in await _rows(agent, "fresh")) == sorted(contents)
    assert len({r["id"] for r in results}) == len(contents)
