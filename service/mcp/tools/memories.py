"""Memory tools: store, list_memories, and the id-keyed edits update_memory,
lock_memory, unlock_memory, delete_memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.errors import Refused
from service.mcp import acl
from service.mcp.listing_params import ListParams, listed
from service.mcp.registry import (
    PausePolicy,
    ToolEnv,
    ToolSpec,
    obj,
    on_agent,
    refuse_with,
    skip_with,
)
from service.mcp.render import listing as render_listing, writes
from service.mcp.schemas import (
    AS_OF,
    CHANNEL,
    CURRENT_ONLY,
    LIST_AGENT_ID,
    MEMORY_ID,
    OWNER_AGENT_ID,
    PROJECT_ID,
    SUPERSEDES,
    WRITE_PROJECT_ID,
    identifier,
    name,
    string,
)
from service.mcp.shaping import listing as listing_shaping
from service.memory import bounds
from service.memory.memories import edits, listing, store
from service.models import JsonObject

STORE_DESCRIPTION = """Save one durable fact (preference, decision, name, result) to
recall later: put the text in content; at most 16,000 characters; a repeated id or content
is skipped. lock: true also locks it. Returns {ok, result: stored|skipped|rejected, id,
reason?}."""
BOTH_FORMS = (
    "send content, id, source, timestamp and metadata either at the top level or inside "
    "message, not both"
)
FLAT_FIELDS = ("content", "id", "source", "timestamp", "metadata")
"""store's top-level form (CPersona 2.6): the fields of ``message``, beside it."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StoreParams:
    agent_id: str | None = None  # omitted: the key's one writable agent (KeyAgent)
    message: JsonObject | None = None  # the library reads and normalises its fields
    content: str | None = None
    id: str | None = None
    source: JsonObject | None = None
    timestamp: str | None = None
    metadata: JsonObject | None = None
    lock: bool | None = None  # true: also lock the row
    channel: str
    project_id: str
    associations: JsonObject | None = None
    supersedes: tuple[str, ...] | None = None


def _given(value: object) -> bool:
    """A top-level field counts as sent when it says something: ``""``, ``{}`` and null
    are as good as absent, except ``content`` and ``source``, which count whenever present
    (CPersona 2.6's reading)."""
    return value is not None and value != "" and value != {}


def store_message(params: StoreParams) -> JsonObject:
    """The ``message`` the library stores: the message form as sent, or the top-level form
    gathered into one (docs/tools.md, "store"). Both at once is refused, since neither half
    can be preferred without guessing. At the top level an omitted ``source`` is this
    agent, ``{type: Agent, id: <agent_id>, name: ""}``; the message form keeps the
    anonymous ``{}``, so no existing caller's attribution moves."""
    flat = params.content is not None or params.source is not None
    flat = flat or any(_given(v) for v in (params.id, params.timestamp, params.metadata))
    if params.message and flat:
        raise Refused(BOTH_FORMS)
    if params.message:
        return params.message
    message: JsonObject = {"content": params.content or ""}
    if params.id:
        message["id"] = params.id
    if params.source is None:
        message["source"] = {"type": "Agent", "id": params.agent_id or "", "name": ""}
    else:
        message["source"] = params.source
    if params.timestamp:
        message["timestamp"] = params.timestamp
    if params.metadata:
        message["metadata"] = params.metadata
    return message


async def _store(env: ToolEnv, params: StoreParams) -> JsonObject:
    request = store.StoreRequest(
        agent_id=params.agent_id or "",
        message=store_message(params),
        channel=params.channel,
        project_id=params.project_id,
        associations=params.associations,
        lock=params.lock is True,
        supersedes=None if params.supersedes is None else list(params.supersedes),
    )
    outcome = await store.store(env.lib, env.caller.tenant_id, request, env.pause_guard)
    return writes.store_outcome(outcome)


def _store_refusal_fields(args: Mapping[str, Any]) -> JsonObject:
    """Every store refusal says ``result: rejected``, and ``locked: false`` under ``lock``."""
    fields: JsonObject = {"result": "rejected"}
    if args.get("lock") is True:
        fields["locked"] = False
    return fields


def _store_paused(env: ToolEnv, params: StoreParams) -> JsonObject:
    """The skipped store: nothing written, nothing locked."""
    return {**writes.STORE_PAUSED, "locked": False} if params.lock else dict(writes.STORE_PAUSED)


MESSAGE_ID = string(bounds.MSG_ID_CHARS, description="msg_id (dedup key)")
STORE = ToolSpec(
    name="store",
    description=STORE_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": identifier(description="omit if the key writes one agent"),
            "content": {"type": "string"},
            "id": MESSAGE_ID,
            "source": {"type": "object", "description": "{type: User|Agent|System, id, name}"},
            "timestamp": name(),
            "metadata": {"type": "object"},
            "lock": {"type": "boolean"},
            "message": obj(
                {
                    "id": MESSAGE_ID,
                    "content": {"type": "string"},
                    "source": {"type": "object"},
                    "timestamp": name(),
                    "metadata": {"type": "object"},
                },
            ),
            "channel": CHANNEL,
            "project_id": WRITE_PROJECT_ID,
            "associations": {"type": "object"},
            "supersedes": SUPERSEDES,
        },
    ),
    params=StoreParams,
    handler=_store,
    library_checks_text=True,
    project_gate=True,
    agent_from_key=True,
    demands=on_agent("agent_id", "read-write"),
    refusal=writes.store_rejected,
    refusal_fields=_store_refusal_fields,
    pause=PausePolicy(body=_store_paused, in_write=True),
    destructive=False,
    idempotent=True,
    always_load=True,
)


LIST_MEMORIES_DESCRIPTION = """Browse memories newest first (recall searches); limit clamped to
0..500. Returns {memories, count}."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListMemoriesParams(ListParams):
    """list_memories also reads as of a time, or only current records (docs/tools.md,
    "Facts that change")."""

    as_of: str = ""
    current_only: bool


async def _list_memories(env: ToolEnv, params: ListMemoriesParams) -> JsonObject:
    if params.as_of or params.current_only:
        found = await listing.list_memories(
            env.lib,
            env.caller.tenant_id,
            agent_id=params.agent_id,
            project_id=params.project_id,
            limit=params.limit,
            as_of=params.as_of,
            current_only=params.current_only,
        )
    else:
        found = await listed(env, params, listing.list_memories)
    preview_chars = env.lib.settings.recall_preview_chars
    shaped, trimmed = listing_shaping.budget_list_memories(found.rows, preview_chars)
    sent = [render_listing.memory(item.row, item.cut) for item in shaped]
    return render_listing.page(
        "memories", sent, trimmed, listing_shaping.LIST_MEMORIES_BUDGET_CHARS, found.capped_at
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
    keep_history: bool


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
    destructive=False,
    idempotent=True,
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
    destructive=False,
    idempotent=True,
)


UNLOCK_MEMORY = ToolSpec(
    name="unlock_memory",
    description="""Undo lock_memory. Returns {ok, unlocked_id}.""",
    input_schema=_LOCK_SCHEMA,
    params=MemoryIdParams,
    handler=_unlock,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.UNLOCK_PAUSED),
    destructive=False,
    idempotent=True,
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
    pause=skip_with(writes.DELETE_PAUSED),
    destructive=True,
    idempotent=True,
)

TOOLS = [STORE, LIST_MEMORIES, DELETE_MEMORY, UPDATE_MEMORY, LOCK_MEMORY, UNLOCK_MEMORY]
