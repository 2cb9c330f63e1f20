"""Memory tools: store, list_memories, and the id-keyed edits update_memory,
lock_memory, unlock_memory, delete_memory."""

from __future__ import annotations

from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent, refuse_with, skip_with
from service.mcp.schemas import (
    AGENT_ID,
    CHANNEL,
    LIST_AGENT_ID,
    MEMORY_ID,
    OWNER_AGENT_ID,
    PROJECT_ID,
    WRITE_PROJECT_ID,
)
from service.mcp.shaping import listing as shaping
from service.memory.memories import edits, listing, store
from service.models import JsonObject

STORE_DESCRIPTION = """Store one fact in long-term memory.

Use for durable facts worth recalling later (preferences, decisions, names, results).
Content is cleaned ([Memory from …] annotations removed, trimmed) and capped at 16,000
characters (`truncated: true` when cut). There is no upsert: a message whose `id`
(msg_id) or identical content already exists in the same agent/project scope is
skipped and the existing id returned; correct a memory with update_memory instead.

Returns {ok, result: "stored"|"skipped"|"rejected", id?, embedded, truncated?, reason?}.
`rejected` means nothing was written (empty content, source/metadata over 8,000
serialised characters)."""


def _refuse_store(message: str) -> JsonObject:
    """store's failure shape (spec §5.1): the reason, not an ``error`` key."""
    return {"ok": False, "result": "rejected", "reason": message}


async def _store(env: ToolEnv, args: JsonObject) -> JsonObject:
    request = store.StoreRequest(
        agent_id=args["agent_id"],
        message=args["message"],
        channel=args["channel"],
        project_id=args["project_id"],
    )
    return await store.store(env.lib, env.caller.tenant_id, request)


STORE = ToolSpec(
    name="store",
    description=STORE_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "message": obj(
                {
                    "id": {"type": "string", "description": "Your message id (dedup key)."},
                    "content": {"type": "string", "description": "The fact to remember."},
                    "source": {
                        "type": "object",
                        "description": "Who said it: {type: User|Agent|System, id, name}.",
                    },
                    "timestamp": {
                        "type": "string",
                        "description": "ISO-8601 time of the fact (default: now, UTC).",
                    },
                    "metadata": {"type": "object", "description": "Free-form JSON."},
                }
            ),
            "channel": CHANNEL,
            "project_id": WRITE_PROJECT_ID,
        },
        ["agent_id", "message"],
    ),
    handler=_store,
    project_gate=True,
    demands=on_agent("agent_id", "read-write"),
    refusal=_refuse_store,
    pause=skip_with({"ok": True, "result": "skipped", "id": 0, "embedded": False}),
)


LIST_MEMORIES_DESCRIPTION = """List stored memories, newest first.

Use to browse or audit what is remembered; use recall to search. Omit `agent_id` (or
pass "") to list every agent of your tenant. `limit` is clamped to 0..500. Rows are
{id, agent_id, project_id, content, source, timestamp, created_at, locked, channel}.
Past 1,000,000 characters of content in one response, later rows carry a 500-character
prefix plus `content_truncated`, `content_len` and `ref` (expand with get_contents);
`budget_chars` then says so."""


async def _list_memories(env: ToolEnv, args: JsonObject) -> JsonObject:
    rows = await listing.list_memories(
        env.lib,
        env.caller.tenant_id,
        agent_id=args["agent_id"],
        project_id=args.get("project_id"),
        limit=args["limit"],
    )
    return shaping.shape_listing("memories", rows, env.lib.settings.recall_preview_chars)


LIST_MEMORIES = ToolSpec(
    name="list_memories",
    description=LIST_MEMORIES_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": LIST_AGENT_ID,
            "limit": {"type": "integer", "default": 100, "description": "Rows (0..500)."},
            "project_id": PROJECT_ID,
        }
    ),
    handler=_list_memories,
    project_gate=True,
    refusal=refuse_with(memories=[], count=0),
    demands=on_agent("agent_id", "read"),
    read_only=True,
)


async def _update_memory(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.update_memory(
        env.lib, env.caller.tenant_id, args["memory_id"], args["content"], args["agent_id"]
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
        env.lib, env.caller.tenant_id, args["memory_id"], True, args["agent_id"]
    )


async def _unlock(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await edits.set_lock(
        env.lib, env.caller.tenant_id, args["memory_id"], False, args["agent_id"]
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
        env.lib, env.caller.tenant_id, args["memory_id"], args["agent_id"]
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

TOOLS = [STORE, LIST_MEMORIES, DELETE_MEMORY, UPDATE_MEMORY, LOCK_MEMORY, UNLOCK_MEMORY]
