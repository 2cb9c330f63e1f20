"""update/lock/unlock/delete over MCP/HTTP (docs/tools.md, "update_memory";
docs/tools.md, "lock_memory"; docs/tools.md, "delete_memory"; docs/tools.md, "delete_agent_data"),
acceptance 57-64."""

from __future__ import annotations

from typing import Any

from tests.support import Agent


async def _store(client: Agent, content: str, agent: str = "a", **extra: Any) -> int:
    body = await client.call("store", agent_id=agent, message={"content": content}, **extra)
    assert body["result"] == "stored"
    return int(body["id"])


async def _contents(client: Agent, agent: str = "a") -> list[str]:
    listed = await client.call("list_memories", agent_id=agent)
    return [row["content"] for row in listed["memories"]]


async def test_lock_blocks_update_and_delete_until_unlocked(client: Agent) -> None:
    memory = await _store(client, "protected")
    assert await client.call("lock_memory", memory_id=memory) == {"ok": True, "locked_id": memory}
    assert await client.call("lock_memory", memory_id=memory) == {"ok": True, "locked_id": memory}
    edit = await client.call("update_memory", memory_id=memory, content="changed")
    delete = await client.call("delete_memory", memory_id=memory)
    assert edit == {"ok": False, "error": f"Memory {memory} is locked and cannot be edited"}
    assert delete == {"ok": False, "error": f"Memory {memory} is locked and cannot be deleted"}
    assert await client.call("unlock_memory", memory_id=memory) == {
        "ok": True,
        "unlocked_id": memory,
    }
    assert await client.call("update_memory", memory_id=memory, content="changed") == {
        "ok": True,
        "updated_id": memory,
    }
    assert await client.call("delete_memory", memory_id=memory) == {
        "ok": True,
        "deleted_id": memory,
    }
    assert await _contents(client) == []


async def test_non_owner_is_refused(client: Agent) -> None:
    memory = await _store(client, "mine", agent="owner")
    lock = await client.call("lock_memory", memory_id=memory, agent_id="intruder")
    delete = await client.call("delete_memory", memory_id=memory, agent_id="intruder")
    edit = await client.call("update_memory", memory_id=memory, content="x", agent_id="intruder")
    assert lock == {"ok": False, "error": f"Memory {memory} not owned by agent intruder"}
    assert delete == {
        "ok": False,
        "error": f"Memory {memory} not found, not owned by agent, or locked",
    }
    assert edit == {"ok": False, "error": f"Memory {memory} not owned by agent intruder"}
    assert await _contents(client, "owner") == ["mine"]


async def test_update_refuses_blank_content_and_missing_rows(client: Agent) -> None:
    memory = await _store(client, "keep")
    blank = await client.call("update_memory", memory_id=memory, content="   ")
    annotation = await client.call("update_memory", memory_id=memory, content="[Memory from x]")
    missing = await client.call("update_memory", memory_id=999_999, content="x")
    assert blank == {"ok": False, "error": "Content cannot be empty"}
    assert annotation == {"ok": False, "error": "Content cannot be empty after sanitization"}
    assert missing == {"ok": False, "error": "Memory 999999 not found"}
    for bad_id in (0, -5, 2**63):
        body = await client.call("delete_memory", memory_id=bad_id)
        assert body == {"ok": False, "error": f"Memory {bad_id} not found"}
    assert await _contents(client) == ["keep"]


async def test_update_to_a_duplicate_in_the_same_bucket_is_a_bare_unique_error(
    client: Agent,
) -> None:
    await _store(client, "one")
    two = await _store(client, "two")
    body = await client.call("update_memory", memory_id=two, content="one")
    assert "ok" not in body
    assert body["error"].startswith("UNIQUE constraint failed: ")
    assert sorted(await _contents(client)) == ["one", "two"]


async def test_update_changes_what_is_stored_and_reports_truncation(client: Agent) -> None:
    memory = await _store(client, "old wording")
    body = await client.call("update_memory", memory_id=memory, content="n" * 16_500)
    assert body == {"ok": True, "updated_id": memory, "truncated": True}
    assert await _contents(client) == ["n" * 16_000]


async def test_delete_without_agent_deletes_any_owners_row(client: Agent) -> None:
    memory = await _store(client, "someone's", agent="other")
    assert await client.call("delete_memory", memory_id=memory) == {
        "ok": True,
        "deleted_id": memory,
    }
    assert await _contents(client, "other") == []


async def test_delete_agent_data_requires_an_agent_and_reports_counts(client: Agent) -> None:
    refused = await client.call("delete_agent_data", agent_id="")
    assert refused == {"ok": False, "error": "agent_id is required for bulk deletion"}
    await _store(client, "m1")
    locked = await _store(client, "m2", project_id="p", channel="c")
    await client.call("lock_memory", memory_id=locked)
    await client.call("archive_episode", agent_id="a", summary="s")
    await client.call("update_profile", agent_id="a", profile="p")
    await _store(client, "survivor", agent="b")
    body = await client.call("delete_agent_data", agent_id="a")
    assert body == {
        "ok": True,
        "agent_id": "a",
        "deleted_memories": 2,
        "deleted_profiles": 1,
        "deleted_episodes": 1,
        "deleted_pending_tasks": 0,
    }
    assert await _contents(client) == []
    assert await _contents(client, "b") == ["survivor"]
    assert await client.call("get_profile", agent_id="a") == {"profile": ""}


async def test_delete_episode_checks_ownership(client: Agent) -> None:
    episode = (await client.call("archive_episode", agent_id="a", summary="done"))["episode_id"]
    foreign = await client.call("delete_episode", episode_id=episode, agent_id="b")
    assert foreign == {"ok": False, "error": f"Episode {episode} not found or not owned by agent"}
    owned = await client.call("delete_episode", episode_id=episode, agent_id="a")
    assert owned == {"ok": True, "deleted_id": episode}
    again = await client.call("delete_episode", episode_id=episode)
    assert again == {"ok": False, "error": f"Episode {episode} not found or not owned by agent"}
