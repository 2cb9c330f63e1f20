"""store's CPersona 2.6 forms over MCP/HTTP (docs/tools.md, "store"): the top-level fields
beside ``message``, ``lock: true``, and ``agent_id`` taken from a key that can write exactly
one agent; acceptance behaviours 50, 51 and 53 of the 2.6 changes."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.models import Permission
from tests.support import Agent, Served, new_tenant, serve

BOTH_FORMS = (
    "send content, id, source, timestamp and metadata either at the top level or inside "
    "message, not both"
)
AGENT_REQUIRED = (
    "agent_id is required: it can be omitted only on a connection whose ACL grants write "
    "access to exactly one agent"
)


async def _rows(client: Agent, agent: str = "a") -> list[dict[str, Any]]:
    listed = await client.call("list_memories", agent_id=agent, limit=500)
    rows: list[dict[str, Any]] = listed["memories"]
    return rows


async def test_the_top_level_form_stores_like_the_message_form(client: Agent) -> None:
    """``content``, ``id``, ``timestamp``, ``metadata`` at the top level; an omitted
    ``source`` is this agent there, the anonymous ``{}`` in the message form."""
    flat = await client.call(
        "store",
        agent_id="a",
        content="Ada prefers tea",
        id="m1",
        timestamp="2026-03-01T10:00:00+00:00",
        metadata={"k": 1},
    )
    assert flat == {"ok": True, "result": "stored", "id": flat["id"], "embedded": False}
    again = await client.call("store", agent_id="a", content="changed", id="m1")
    assert (again["result"], again["id"]) == ("skipped", flat["id"])
    await client.call("store", agent_id="a", message={"content": "Ada lives in Paris"})
    sourced = await client.call(
        "store", agent_id="a", content="Bob called", source={"type": "User", "id": "u1"}
    )
    assert sourced["result"] == "stored"
    rows = {row["content"]: row for row in await _rows(client)}
    assert rows["Ada prefers tea"]["source"] == {"type": "Agent", "id": "a", "name": ""}
    assert rows["Ada prefers tea"]["timestamp"] == "2026-03-01T10:00:00+00:00"
    assert rows["Ada lives in Paris"]["source"] == {}
    assert rows["Bob called"]["source"] == {"type": "User", "id": "u1"}


async def test_both_forms_in_one_call_are_rejected(client: Agent) -> None:
    """Acceptance 50: nothing is written."""
    flat: list[dict[str, Any]] = [
        {"content": "x"},
        {"id": "m1"},
        {"source": {}},
        {"metadata": {"k": 1}},
    ]
    for extra in flat:
        body = await client.call("store", agent_id="a", message={"content": "y"}, **extra)
        assert body == {"ok": False, "result": "rejected", "reason": BOTH_FORMS}, extra
    assert await _rows(client) == []
    locked = await client.call(
        "store", agent_id="a", message={"content": "y"}, content="x", lock=True
    )
    assert locked == {"ok": False, "result": "rejected", "reason": BOTH_FORMS, "locked": False}


async def test_neither_form_is_an_empty_content_rejection(client: Agent) -> None:
    body = await client.call("store", agent_id="a")
    assert body == {"ok": False, "result": "rejected", "reason": "empty content"}


async def test_lock_true_locks_the_stored_row_and_the_row_a_skip_names(client: Agent) -> None:
    """Acceptance 53: ``locked: true`` and a later update_memory refused as locked; a dedup
    skip locks the existing row; a rejected store says ``locked: false``."""
    body = await client.call("store", agent_id="a", content="keep me", lock=True)
    assert body == {
        "ok": True,
        "result": "stored",
        "id": body["id"],
        "embedded": False,
        "locked": True,
    }
    update = await client.call("update_memory", memory_id=body["id"], content="edited")
    assert update["ok"] is False
    assert "locked" in update["error"]
    plain = await client.call("store", agent_id="a", message={"content": "plain"})
    assert "locked" not in plain
    skip = await client.call("store", agent_id="a", message={"content": "plain"}, lock=True)
    assert (skip["result"], skip["id"], skip["locked"]) == ("skipped", plain["id"], True)
    assert {row["content"]: row["locked"] for row in await _rows(client)} == {
        "keep me": True,
        "plain": True,
    }
    empty = await client.call("store", agent_id="a", content="   ", lock=True)
    assert empty == {
        "ok": False,
        "result": "rejected",
        "reason": "empty after sanitization",
        "locked": False,
    }


async def test_lock_true_under_a_pause_says_locked_false(client: Agent) -> None:
    await client.call("pause_persistence", ttl_seconds=60)
    body = await client.call("store", agent_id="a", content="not now", lock=True)
    assert (body["persisted"], body["locked"]) == (False, False)


async def test_agent_id_is_required_unless_the_key_writes_exactly_one_agent(
    lib: Library, served: Served, client: Agent
) -> None:
    """Acceptance 51: a key of ``*`` read-write cannot omit it; a key that writes exactly
    one agent stores for it and says so in ``resolved_agent_id``."""
    refused = await client.call("store", content="whose?")
    assert refused == {"ok": False, "result": "rejected", "reason": AGENT_REQUIRED}
    locked = await client.call("store", content="whose?", lock=True)
    assert locked == {**refused, "locked": False}
    grants: dict[str, Permission] = {"solo": "read-write", "other": "read", "*": "none"}
    key = await tenants.create_key(lib.db, "acme", label="solo", grants=grants)
    solo = Agent(served, key)
    body = await solo.call("store", content="mine", lock=True)
    assert body == {
        "ok": True,
        "result": "stored",
        "id": body["id"],
        "embedded": False,
        "locked": True,
        "resolved_agent_id": "solo",
    }
    assert [row["content"] for row in await _rows(client, "solo")] == ["mine"]
    two: dict[str, Permission] = {"solo": "read-write", "other": "read-write"}
    pair = Agent(served, await tenants.create_key(lib.db, "acme", label="pair", grants=two))
    assert await pair.call("store", content="whose?") == refused


async def test_a_denied_store_carries_result_rejected(lib: Library, served: Served) -> None:
    """CPersona 2.6: a denial of store or declare_associations also says ``result:
    rejected`` (and store's ``locked: false`` under ``lock: true``), the field every answer
    of the two carries."""
    owner = Agent(served, await new_tenant(lib, "deny"))
    grants: dict[str, Permission] = {"*": "read"}
    reader = Agent(served, await tenants.create_key(lib.db, "deny", label="r", grants=grants))
    body = await reader.call("store", agent_id="a", content="no", lock=True)
    assert (body["error"], body["result"], body["locked"]) == (
        "permission_denied",
        "rejected",
        False,
    )
    assert await _rows(owner) == []
    declared = await reader.call("declare_associations", agent_id="a", associations={})
    assert (declared["error"], declared["result"]) == ("permission_denied", "rejected")


FUTURE = "2099-01-01T00:00:00+00:00"


async def test_a_timestamp_past_the_allowance_is_stored_with_a_warning(client: Agent) -> None:
    """Acceptance 54 (mode ``warn``, the default): stored, and the answer says how far ahead
    of the server's clock it is; a stamp inside the 300 s allowance says nothing."""
    body = await client.call("store", agent_id="a", content="from the future", timestamp=FUTURE)
    assert body["result"] == "stored"
    ahead = body["timestamp_ahead_of_clock"]
    assert list(body)[-1] == "timestamp_ahead_of_clock"
    assert (ahead["timestamp"], ahead["allowance_seconds"]) == (FUTURE, 300)
    assert ahead["ahead_by_seconds"] > 365 * 86_400
    soon = (datetime.now(UTC) + timedelta(seconds=60)).isoformat()
    near = await client.call("store", agent_id="a", message={"content": "soon", "timestamp": soon})
    assert near["result"] == "stored"
    assert "timestamp_ahead_of_clock" not in near


async def test_future_timestamp_modes_reject_and_off(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """``reject`` refuses the write (nothing stored), ``off`` stores it silently."""
    strict = dataclasses.replace(settings, future_timestamp_mode="reject")
    async with serve(strict, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "strict"))
        body = await agent.call("store", agent_id="a", content="later", timestamp=FUTURE)
        assert body["ok"] is False
        assert body["result"] == "rejected"
        assert body["reason"].startswith(f"timestamp {FUTURE!r} is ")
        assert body["reason"].endswith("s ahead of this clock (allowance 300s)")
        assert await _rows(agent) == []
    quiet = dataclasses.replace(settings, future_timestamp_mode="off")
    async with serve(quiet, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "quiet"))
        body = await agent.call("store", agent_id="a", content="later", timestamp=FUTURE)
        assert body == {"ok": True, "result": "stored", "id": body["id"], "embedded": False}


async def test_an_episode_history_ahead_of_the_clock_warns_or_is_refused(
    lib: Library, settings: Settings, database_url: str, client: Agent
) -> None:
    """archive_episode judges its history's latest, then earliest, stamp the same way."""
    history = [{"timestamp": "2026-01-01T00:00:00+00:00"}, {"timestamp": FUTURE}]
    body = await client.call("archive_episode", agent_id="a", summary="s", history=history)
    assert body["ok"] is True
    assert body["timestamp_ahead_of_clock"]["timestamp"] == FUTURE
    past = await client.call("archive_episode", agent_id="a", summary="s", history=history[:1])
    assert "timestamp_ahead_of_clock" not in past
    strict = dataclasses.replace(settings, future_timestamp_mode="reject")
    async with serve(strict, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "strict-ep"))
        refused = await agent.call("archive_episode", agent_id="a", summary="s", history=history)
        assert refused["ok"] is False
        assert refused["episode_id"] is None
        assert refused["error"].startswith(f"history timestamp {FUTURE!r} is ")
        assert (await agent.call("list_episodes", agent_id="a"))["count"] == 0
