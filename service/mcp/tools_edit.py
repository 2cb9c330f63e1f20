"""Tools that change or delete existing rows by id, and delete_agent_data."""

from __future__ import annotations

from service.mcp.registry import (
    JsonObject,
    PausePolicy,
    ToolEnv,
    ToolSpec,
    obj,
    on_agent,
    skip_with,
)
from service.mcp.schemas import AGENT_ID, EPISODE_ID, MEMORY_ID, OWNER_AGENT_ID
from service.memory import agents, edits


async def _update_memory(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.update_memory(
        env.lib, env.caller.tenant_id, args["memory_id"], args["content"], args.get("agent_id", "")
    )


UPDATE_MEMORY = ToolSpec(
    name="update_memory",
    description="""Replace the content of one memory (a correction).

Keeps its msg_id, timestamp, channel and project. Refused for locked memories
("Memory N is locked and cannot be edited"), for another agent's memory when you pass
agent_id, and for empty content. Content is cleaned and capped like store
(`truncated: true` when cut). Returns {ok: true, updated_id}.""",
    input_schema=obj(
        {
            "memory_id": MEMORY_ID,
            "content": {"type": "string", "description": "The new full content."},
            "agent_id": OWNER_AGENT_ID,
        },
        ["memory_id", "content"],
    ),
    handler=_update_memory,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with({"ok": True, "updated_id": None}),
)


async def _lock(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.set_lock(
        env.lib, env.caller.tenant_id, args["memory_id"], True, args.get("agent_id", "")
    )


async def _unlock(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.set_lock(
        env.lib, env.caller.tenant_id, args["memory_id"], False, args.get("agent_id", "")
    )


_LOCK_SCHEMA = obj({"memory_id": MEMORY_ID, "agent_id": OWNER_AGENT_ID}, ["memory_id"])

LOCK_MEMORY = ToolSpec(
    name="lock_memory",
    description="""Protect one memory from update_memory and delete_memory (and from repairs).

Use for facts that must not drift. Locking is idempotent and does not change ranking;
delete_agent_data still removes locked rows. Returns {ok: true, locked_id}.""",
    input_schema=_LOCK_SCHEMA,
    handler=_lock,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with({"ok": True, "locked_id": None}),
)

UNLOCK_MEMORY = ToolSpec(
    name="unlock_memory",
    description="""Lift the protection set by lock_memory. Returns {ok: true, unlocked_id}.""",
    input_schema=_LOCK_SCHEMA,
    handler=_unlock,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with({"ok": True, "unlocked_id": None}),
)


async def _delete_memory(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.delete_memory(
        env.lib, env.caller.tenant_id, args["memory_id"], args.get("agent_id", "")
    )


DELETE_MEMORY = ToolSpec(
    name="delete_memory",
    description="""Delete one memory by id. Locked memories are refused (unlock first).

Pass your agent_id so only your own memory can be deleted. Returns {ok: true, deleted_id}.""",
    input_schema=obj({"memory_id": MEMORY_ID, "agent_id": OWNER_AGENT_ID}, ["memory_id"]),
    handler=_delete_memory,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
    pause=skip_with({"ok": True, "deleted_id": None}),
)


async def _delete_episode(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.delete_episode(
        env.lib, env.caller.tenant_id, args["episode_id"], args.get("agent_id", "")
    )


DELETE_EPISODE = ToolSpec(
    name="delete_episode",
    description="""Delete one archived episode by id. Returns {ok: true, deleted_id}.""",
    input_schema=obj({"episode_id": EPISODE_ID, "agent_id": OWNER_AGENT_ID}, ["episode_id"]),
    handler=_delete_episode,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
    pause=skip_with({"ok": True, "deleted_id": None}),
)


def _nothing_deleted(env: ToolEnv, args: JsonObject) -> JsonObject:
    """delete_agent_data's success shape with zero counts (its skipped body under a pause)."""
    return {
        "ok": True, "agent_id": args.get("agent_id", ""), "deleted_memories": 0,
        "deleted_profiles": 0, "deleted_episodes": 0, "deleted_pending_tasks": 0,
    }  # fmt: skip


async def _delete_agent_data(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await agents.delete_agent_data(env.lib, env.caller.tenant_id, args["agent_id"])


DELETE_AGENT_DATA = ToolSpec(
    name="delete_agent_data",
    description="""Permanently delete everything one agent stored: memories (locked ones
included), episodes and its profile, in every project and channel. Irreversible.

Returns {ok: true, agent_id, deleted_memories, deleted_profiles, deleted_episodes,
deleted_pending_tasks}.""",
    input_schema=obj({"agent_id": AGENT_ID}, ["agent_id"]),
    handler=_delete_agent_data,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
    pause=PausePolicy(body=_nothing_deleted),
)

TOOLS = [
    DELETE_AGENT_DATA,
    DELETE_MEMORY,
    DELETE_EPISODE,
    UPDATE_MEMORY,
    LOCK_MEMORY,
    UNLOCK_MEMORY,
]
