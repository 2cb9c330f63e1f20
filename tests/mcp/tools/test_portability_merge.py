"""merge_memories over MCP/HTTP (docs/portability.md, "Merging agents"), acceptance 84-85, grants of
(docs/tools.md, "Grants")."""

from __future__ import annotations

from typing import Any

import pytest

from service.memory import tenants
from service.memory.library import Library
from tests.support import Agent, Served, new_tenant

COUNTS = (
    "merged_memories",
    "skipped_memories",
    "merged_episodes",
    "skipped_episodes",
    "profile_copied",
    "skipped_profile",
    "source_deleted",
    "left_at_source",
)


async def _state(client: Agent, *agents: str) -> list[Any]:
    state: list[Any] = []
    for agent in agents:
        state.append(await client.call("list_memories", agent_id=agent, limit=500))
        state.append(await client.call("list_episodes", agent_id=agent, limit=200))
        state.append(await client.call("get_profile", agent_id=agent))
    return state


async def _seed(client: Agent) -> dict[str, int]:
    """Source with 4 memories (one locked, one the target has), 3 episodes, a profile."""
    ids: dict[str, int] = {}
    for name, message in {
        "tagged": {"id": "m1", "content": "tagged fact", "timestamp": "2026-01-01T00:00:00Z"},
        "plain": {"content": "plain fact"},
        "shared": {"content": "both have this"},
        "locked": {"content": "locked fact"},
    }.items():
        ids[name] = (await client.call("store", agent_id="src", message=message))["id"]
    await client.call("lock_memory", memory_id=ids["locked"])
    await client.call("store", agent_id="dst", message={"content": "both have this"})
    for summary in ("ep one", "ep two", "ep shared"):
        await client.call("archive_episode", agent_id="src", summary=summary)
    await client.call("archive_episode", agent_id="dst", summary="ep shared")
    await client.call("update_profile", agent_id="src", profile="source profile")
    return ids


async def test_refusals_use_cpersonas_texts(client: Agent) -> None:
    cases = [
        (
            {"source_agent_id": "a", "target_agent_id": "a"},
            "source_agent_id and target_agent_id must differ",
        ),
        (
            {"source_agent_id": "a", "target_agent_id": "b", "mode": "x"},
            "Invalid mode 'x'. Supported: 'copy', 'move'",
        ),
        (
            {"source_agent_id": "a", "target_agent_id": "b", "strategy": "overwrite"},
            "Unsupported strategy 'overwrite'. Currently supported: 'skip'",
        ),
        ({"source_agent_id": "", "target_agent_id": "b"}, "source_agent_id is required"),
        ({"source_agent_id": "a", "target_agent_id": ""}, "target_agent_id is required"),
    ]
    for args, error in cases:
        assert await client.call("merge_memories", **args) == {"ok": False, "error": error}


@pytest.mark.parametrize("mode", ["copy", "move"])
async def test_a_dry_run_predicts_the_real_merge_exactly_and_writes_nothing(
    client: Agent, mode: str
) -> None:
    await _seed(client)
    before = await _state(client, "src", "dst")
    args = {"source_agent_id": "src", "target_agent_id": "dst", "mode": mode}
    dry = await client.call("merge_memories", **args, dry_run=True)
    assert await _state(client, "src", "dst") == before
    real = await client.call("merge_memories", **args)
    assert dry["dry_run"] is True
    assert real["dry_run"] is False
    assert {k: dry.get(k) for k in COUNTS} == {k: real.get(k) for k in COUNTS}
    assert (real["merged_memories"], real["skipped_memories"]) == (3, 1)
    assert (real["merged_episodes"], real["skipped_episodes"]) == (2, 1)
    assert (real["profile_copied"], real["skipped_profile"]) == (True, False)


async def test_copy_carries_rows_verbatim_and_keeps_the_source(client: Agent) -> None:
    await _seed(client)
    await client.call("merge_memories", source_agent_id="src", target_agent_id="dst")
    source = {
        r["content"]: r for r in (await client.call("list_memories", agent_id="src"))["memories"]
    }
    target = {
        r["content"]: r for r in (await client.call("list_memories", agent_id="dst"))["memories"]
    }
    assert set(target) == set(source)
    for content, row in source.items():
        copy = target[content]
        if content != "both have this":
            assert (copy["created_at"], copy["locked"], copy["timestamp"]) == (
                row["created_at"],
                row["locked"],
                row["timestamp"],
            )
            assert copy["id"] != row["id"]
    assert await client.call("get_profile", agent_id="dst") == {"profile": "source profile"}
    again = await client.call("merge_memories", source_agent_id="src", target_agent_id="dst")
    assert (again["merged_memories"], again["skipped_memories"]) == (0, 4)
    assert (again["merged_episodes"], again["profile_copied"]) == (0, False)
    assert again["skipped_profile"] is True


async def test_move_deletes_exactly_the_copied_rows(client: Agent) -> None:
    await _seed(client)
    body = await client.call(
        "merge_memories", source_agent_id="src", target_agent_id="dst", mode="move"
    )
    assert body["source_deleted"] == {
        "ok": True,
        "agent_id": "src",
        "deleted_memories": 3,
        "deleted_profiles": 1,
        "deleted_episodes": 2,
        "deleted_pending_tasks": 0,
    }
    assert body["left_at_source"] == {"memories": 1, "episodes": 1, "profiles": 0}
    left = (await client.call("list_memories", agent_id="src"))["memories"]
    assert [row["content"] for row in left] == ["both have this"]
    kept = (await client.call("list_episodes", agent_id="src"))["episodes"]
    assert [row["summary"] for row in kept] == ["ep shared"]
    moved = (await client.call("list_memories", agent_id="dst"))["memories"]
    assert {row["content"]: row["locked"] for row in moved}["locked fact"] is True


async def test_move_keeps_the_source_profile_when_the_target_has_one(client: Agent) -> None:
    await client.call("store", agent_id="src", message={"content": "fact"})
    await client.call("update_profile", agent_id="src", profile="source profile")
    await client.call("update_profile", agent_id="dst", profile="target profile")
    body = await client.call(
        "merge_memories", source_agent_id="src", target_agent_id="dst", mode="move"
    )
    assert (body["skipped_profile"], body["profile_copied"]) == (True, False)
    assert body["left_at_source"] == {"memories": 0, "episodes": 0, "profiles": 1}
    assert await client.call("get_profile", agent_id="src") == {"profile": "source profile"}
    assert await client.call("get_profile", agent_id="dst") == {"profile": "target profile"}


async def test_a_move_that_empties_the_source_removes_the_agent(
    client: Agent, lib: Library
) -> None:
    await client.call("store", agent_id="src", message={"content": "only fact"})
    body = await client.call(
        "merge_memories", source_agent_id="src", target_agent_id="dst", mode="move"
    )
    assert body["left_at_source"] == {"memories": 0, "episodes": 0, "profiles": 0}
    async with lib.db.admin_tx() as conn:
        names = await conn.fetch("SELECT name FROM agents ORDER BY name")
    assert [row["name"] for row in names] == ["dst"]


async def test_copy_needs_read_on_the_source_and_move_read_write(
    lib: Library, served: Served
) -> None:
    owner = Agent(served, await new_tenant(lib, "grants"))
    await owner.call("store", agent_id="src", message={"content": "fact"})
    limited = Agent(
        served,
        await tenants.create_key(lib.db, "grants", grants={"src": "read", "dst": "read-write"}),
    )
    copied = await limited.call("merge_memories", source_agent_id="src", target_agent_id="dst")
    assert copied["merged_memories"] == 1
    moved = await limited.call(
        "merge_memories", source_agent_id="src", target_agent_id="dst", mode="move"
    )
    assert moved["error"] == "permission_denied"
    assert (moved["agent_id"], moved["required"]) == ("src", "read-write")
    reverse = await limited.call("merge_memories", source_agent_id="dst", target_agent_id="src")
    assert (reverse["agent_id"], reverse["required"]) == ("src", "read-write")
