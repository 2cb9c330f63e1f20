"""The write family's seam (docs/architecture.md): the library answers typed records, never
wire dicts, and the renderers in ``service.mcp.render`` turn them into the tools' JSON.

The wire bytes themselves are pinned by the MCP tool and end-to-end suites; these tests pin
the seam: every public write function of the library is annotated to return a record (a
frozen, slotted dataclass or a union of them), and each renderer gives the exact object,
keys in wire order, for each kind of record.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from service.mcp.render import pauses as render_pauses, writes
from service.memory import agents, episodes, pauses, profiles
from service.memory.memories import edits, store

WRITE_FUNCTIONS: list[Callable[..., Any]] = [
    store.store,
    edits.update_memory,
    edits.set_lock,
    edits.delete_memory,
    episodes.archive_episode,
    episodes.delete_episode,
    profiles.get_profile,
    profiles.update_profile,
    agents.delete_agent_data,
    pauses.pause,
    pauses.resume,
    pauses.status,
]


def _records(annotation: object) -> list[object]:
    """The classes a return annotation names (the members of a union, or itself)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return list(typing.get_args(annotation))
    return [annotation]


@pytest.mark.parametrize("function", WRITE_FUNCTIONS, ids=lambda f: f.__qualname__)
def test_each_write_function_returns_frozen_slotted_records(function: Callable[..., Any]) -> None:
    returned = typing.get_type_hints(function)["return"]
    for record in _records(returned):
        assert isinstance(record, type), (function, record)
        assert dataclasses.is_dataclass(record), (function, record)
        params = record.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, record
        assert "__slots__" in vars(record), record


def _wire(body: object) -> str:
    """The bytes a tool answers (dict order is the JSON order)."""
    return json.dumps(body)


def test_store_outcomes_render_in_wire_order() -> None:
    assert _wire(writes.store_outcome(store.Stored(memory_id=7, embedded=False))) == (
        '{"ok": true, "result": "stored", "id": 7, "embedded": false}'
    )
    truncated = store.Stored(memory_id=7, embedded=True, truncated=True)
    assert _wire(writes.store_outcome(truncated)) == (
        '{"ok": true, "result": "stored", "id": 7, "embedded": true, "truncated": true}'
    )
    assert _wire(writes.store_outcome(store.Skipped("duplicate msg_id", 3))) == (
        '{"ok": true, "result": "skipped", "reason": "duplicate msg_id", "id": 3}'
    )
    assert _wire(writes.store_outcome(store.Skipped("duplicate (unique index)", None))) == (
        '{"ok": true, "result": "skipped", "reason": "duplicate (unique index)"}'
    )
    assert _wire(writes.store_rejected("empty content")) == (
        '{"ok": false, "result": "rejected", "reason": "empty content"}'
    )


def test_edits_render_in_wire_order() -> None:
    assert writes.memory_updated(edits.Updated(memory_id=4)) == {"ok": True, "updated_id": 4}
    assert _wire(writes.memory_updated(edits.Updated(memory_id=4, truncated=True))) == (
        '{"ok": true, "updated_id": 4, "truncated": true}'
    )
    assert writes.lock_set(edits.LockSet(memory_id=4, locked=True)) == {"ok": True, "locked_id": 4}
    unlocked = writes.lock_set(edits.LockSet(memory_id=4, locked=False))
    assert unlocked == {"ok": True, "unlocked_id": 4}
    assert writes.memory_deleted(edits.Deleted(memory_id=4)) == {"ok": True, "deleted_id": 4}


def test_episodes_profiles_and_agents_render_in_wire_order() -> None:
    assert writes.episode_archived(episodes.Archived(episode_id=2)) == {"ok": True, "episode_id": 2}
    assert _wire(writes.episode_archived(episodes.Archived(episode_id=2, truncated=True))) == (
        '{"ok": true, "episode_id": 2, "truncated": true}'
    )
    assert writes.episode_deleted(episodes.EpisodeDeleted(episode_id=2)) == {
        "ok": True,
        "deleted_id": 2,
    }
    assert writes.episode_refused("no") == {"ok": False, "episode_id": None, "error": "no"}
    assert writes.profile(profiles.Profile(text="")) == {"profile": ""}
    assert _wire(writes.profile_update(profiles.ProfileUpdated(truncated=True))) == (
        '{"ok": true, "profiles_updated": 1, "truncated": true}'
    )
    assert _wire(writes.profile_update(profiles.ProfileUnchanged("empty profile"))) == (
        '{"ok": true, "profiles_updated": 0, "reason": "empty profile"}'
    )
    deleted = agents.AgentDataDeleted(
        agent_id="a", memories=1, profiles=2, episodes=3, pending_tasks=4
    )
    assert _wire(writes.agent_data_deleted(deleted)) == (
        '{"ok": true, "agent_id": "a", "deleted_memories": 1, "deleted_profiles": 2, '
        '"deleted_episodes": 3, "deleted_pending_tasks": 4}'
    )


def test_pauses_render_in_wire_order() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert _wire(render_pauses.pause_set(pauses.PauseSet("", at, 60))) == (
        '{"paused": true, "expires_at": "2026-01-02T03:04:05+00:00", "ttl_seconds": 60, '
        '"scope": "tenant"}'
    )
    assert _wire(render_pauses.pause_lifted(pauses.PauseLifted("s", was_active=False))) == (
        '{"paused": false, "was_active": false, "scope": "session", "session_key": "s"}'
    )
    idle = pauses.PauseState("", None, None, tenant_paused=False)
    assert _wire(render_pauses.pause_state(idle)) == (
        '{"paused": false, "expires_at": null, "ttl_remaining_seconds": null, "scope": "tenant"}'
    )
    own = pauses.PauseState("s", at, 42, tenant_paused=True)
    assert _wire(render_pauses.pause_state(own)) == (
        '{"paused": true, "expires_at": "2026-01-02T03:04:05+00:00", '
        '"ttl_remaining_seconds": 42, "scope": "session", "session_key": "s", '
        '"tenant_paused": true}'
    )
