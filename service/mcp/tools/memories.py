"""Memory tools: store, list_memories, and the id-keyed edits update_memory,
lock_memory, unlock_memory, delete_memory."""

from __future__ import annotations

import dataclasses

from service.mcp import acl
from service.mcp.listing_params import ListParams, listed
from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent, refuse_with, skip_with
from service.mcp.render import listing as render_listing, writes
from service.mcp.schemas import (
    AGENT_ID,
    AS_OF,
    CHANNEL,
    CURRENT_ONLY,
    LIST_AGENT_ID,
    MEMORY_ID,
    OWNER_AGENT_ID,
    PROJECT_ID,
    SUPERSEDES,
    WRITE_PROJECT_ID,
    name,
    string,
)
from service.mcp.shaping import listing as listing_shaping
from service.memory import bounds
from service.memory.memories import edits, listing, store
from service.models import JsonObject

STORE_DESCRIPTION = """Save one durable fact (preference, decision, name, result) to
recall later; at most 16,000 characters; a repeated message.id or content is skipped.
Returns {ok, result: stored|skipped|rejected, id, reason?}."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StoreParams:
    agent_id: str
    message: JsonObject  # the library reads and normalises its fields (docs/tools.md, "Writes")
    channel: str
    project_id: str
    associations: JsonObject | None = None
    supersedes: tuple[str, ...] | None = None


async def _store(env: ToolEnv, params: StoreParams) -> JsonObject:
    request = store.StoreRequest(
        agent_id=params.agent_id,
        message=params.message,
        channel=params.channel,
        project_id=params.project_id,
        associations=params.associations,
        supersedes=None if params.supersedes is None else list(params.supersedes),
    )
    outcome = await store.store(env.lib, env.caller.tenant_id, request, env.pause_guard)
    return writes.store_outcome(outcome)


STORE = ToolSpec(
    name="store",
    description=STORE_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "message": obj(
                {
                    "id": string(bounds.MSG_ID_CHARS, description="msg_id (dedup key)"),
                    "content": {"type": "string"},
                    "source": {
                        "type": "object",
                        "description": "{type: User|Agent|System, id, name}",
                    },
                    "timestamp": name(),
                    "metadata": {"type": "object"},
                }
            ),
            "channel": CHANNEL,
            "project_id": WRITE_PROJECT_ID,
            "associations": {"type": "object"},
            "supersedes": SUPERSEDES,
        },
        ["agent_id", "message"],
    ),
    params=StoreParams,
    handler=_store,
    library_checks_text=True,
    project_gate=True,
    demands=on_agent("agent_id", "read-write"),
    refusal=writes.store_rejected,
    pause=skip_with(writes.STORE_PAUSED, in_write=True),
)


LIST_MEMORIES_DESCRIPTION = """Browse memories newest first (recall searches); limit clamped to
0..500. Returns {memories, count}."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListMemoriesParams(ListParams):
    """list_memories also reads as of a time, or only current records (docs/tools.md,
    "Facts that change")."""

    as_of: str = ""
    current_only: bool = False


async def _list_memories(env: ToolEnv, params: ListMemoriesParams) -> JsonObject:
    if params.as_of or params.current_only:
        rows = await listing.list_memories(
            env.lib,
            env.caller.tenant_id,
            agent_id=params.agent_id,
            project_id=params.project_id,
            limit=params.limit,
            as_of=params.as_of,
            current_only=params.current_only,
        )
    else:
        rows = await listed(env, params, listing.list_memories)
    preview_chars = env.lib.settings.recall_preview_chars
    shaped, trimmed = listing_shaping.budget_list_memories(rows, preview_chars)
    sent = [render_listing.memory(item.row, item.cut) for item in shaped]
    return render_listing.page(
        "memories", sent, trimmed, listing_shaping.LIST_MEMORIES_BUDGET_CHARS
    )


LIST_MEMORIES = ToolSpec(
    name="list_memories",
    description=LIST_MEMORIES_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": LIST_AGENT_ID,
            "limit": {"type": "integer", "default": 100},
            "project_id": PROJECT_ID,
            "as_of": AS_OF,
            "current_only": CURRENT_ONLY,
        }
    ),
    params=ListMemoriesParams,
    handler=_list_memories,
    project_gate=True,
    refusal=refuse_with(memories=[], count=0),
    demands=on_agent("agent_id", "read"),
    read_only=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMemoryParams:
    memory_id: int
    content: str
    agent_id: str
    keep_history: bool = False


async def _update_memory(env: ToolEnv, params: UpdateMemoryParams) -> JsonObject:
    updated = await edits.update_memory(
        env.lib,
        env.caller.tenant_id,
        params.memory_id,
        params.content,
        params.agent_id,
        env.pause_guard,
        acl.sees(env.caller),
        keep_history=params.keep_history,
    )
    return writes.memory_updated(updated)


UPDATE_MEMORY = ToolSpec(
    name="update_memory",
    description="""Correct one memory's content (refused when locked). Returns {ok,
updated_id}.""",
    input_schema=obj(
        {
            "memory_id": MEMORY_ID,
            "content": {"type": "string"},
            "agent_id": OWNER_AGENT_ID,
            "keep_history": {
                "type": "boolean",
                "default": False,
                "description": "as a new record superseding it",
            },
        },
        ["memory_id", "content"],
    ),
    params=UpdateMemoryParams,
    handler=_update_memory,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.UPDATE_PAUSED, in_write=True),
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MemoryIdParams:
    """lock_memory, unlock_memory and delete_memory: one memory, by id."""

    memory_id: int
    agent_id: str


async def _set_lock(env: ToolEnv, params: MemoryIdParams, locked: bool) -> JsonObject:
    lock = await edits.set_lock(
        env.lib,
        env.caller.tenant_id,
        params.memory_id,
        locked,
        params.agent_id,
        acl.sees(env.caller),
    )
    return writes.lock_set(lock)


async def _lock(env: ToolEnv, params: MemoryIdParams) -> JsonObject:
    return await _set_lock(env, params, True)


async def _unlock(env: ToolEnv, params: MemoryIdParams) -> JsonObject:
    return await _set_lock(env, params, False)


_LOCK_SCHEMA = obj({"memory_id": MEMORY_ID, "agent_id": OWNER_AGENT_ID}, ["memory_id"])


LOCK_MEMORY = ToolSpec(
    name="lock_memory",
    description="""Protect one memory from edits, deletion and repairs. Returns {ok,
locked_id}.""",
    input_schema=_LOCK_SCHEMA,
    params=MemoryIdParams,
    handler=_lock,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.LOCK_PAUSED),
)


UNLOCK_MEMORY = ToolSpec(
    name="unlock_memory",
    description="""Undo lock_memory. Returns {ok, unlocked_id}.""",
    input_schema=_LOCK_SCHEMA,
    params=MemoryIdParams,
    handler=_unlock,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.UNLOCK_PAUSED),
)


async def _delete_memory(env: ToolEnv, params: MemoryIdParams) -> JsonObject:
    deleted = await edits.delete_memory(
        env.lib, env.caller.tenant_id, params.memory_id, params.agent_id, acl.sees(env.caller)
    )
    return writes.memory_deleted(deleted)


DELETE_MEMORY = ToolSpec(
    name="delete_memory",
    description="""Delete one memory (refused when locked). Returns {ok, deleted_id}.""",
    input_schema=obj({"memory_id": MEMORY_ID, "agent_id": OWNER_AGENT_ID}, ["memory_id"]),
    params=MemoryIdParams,
    handler=_delete_memory,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
    pause=skip_with(writes.DELETE_PAUSED),
)

TOOLS = [STORE, LIST_MEMORIES, DELETE_MEMORY, UPDATE_MEMORY, LOCK_MEMORY, UNLOCK_MEMORY]
