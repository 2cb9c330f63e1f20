"""Edits of single memories and episodes by id (docs/tools.md, "update_memory";
docs/tools.md, "lock_memory"; docs/tools.md, "delete_memory").

Id-keyed tools act inside the caller's tenant only: a memory id of another
tenant is "not found", exactly like an id that does not exist. ``agent_id``
empty means "any owner within the tenant", as in CPersona; non-empty adds the
ownership check. The order of checks and the messages follow the spec.

Inside a tenant, a caller passes ``visible``: the agents whose rows it may see (its read
grants). A row of any other agent is "not found" too, before the lock and owner checks,
so a key without the grant learns neither that the row exists nor whether it is locked
(docs/reliability.md, "Walls inside a tenant").

Each edit answers a typed record (:class:`Updated`, :class:`LockSet`, :class:`Deleted`); the
MCP boundary renders it (``service.mcp.render.writes``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from service.db import memories, queue
from service.db.pool import Connection
from service.errors import Conflict, NotFound, Refused
from service.memory import pauses, supersession, text
from service.memory.library import Library
from service.memory.memories import history
from service.memory.passages import plan as passage_plan
from service.memory.queue.inline import (
    InlineEmbedding,
    embed_inline,
    embed_soon,
    waits_for_vector,
)
from service.models import TenantId

MAX_ID = 2**63 - 1
Visible = Callable[[str], bool]
"""Whether the caller may see an agent's rows (None: every agent of the tenant)."""
UNIQUE_COLUMNS = {
    "memories_dedup_content": "memories.agent_id, memories.project_id, memories.channel, "
    "memories.content",
    "memories_dedup_msg_id": "memories.agent_id, memories.project_id, memories.msg_id",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Updated:
    """The memory whose content was replaced, and whether the new content was cut; with
    ``keep_history`` the new record (``new_id``) that supersedes it (``relation``)."""

    memory_id: int
    truncated: bool = False
    new_id: int | None = None
    relation: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LockSet:
    """The memory now locked (``locked``) or unlocked."""

    memory_id: int
    locked: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Deleted:
    """The memory deleted, and the supersessions made to keep its chain whole."""

    memory_id: int
    relinked: tuple[supersession.Relinked, ...] = ()


def _check_id(memory_id: int) -> None:
    """An id no row can have (not a positive bigint) is simply not found."""
    if not 0 < memory_id <= MAX_ID:
        raise NotFound(f"Memory {memory_id} not found")


async def _target(
    conn: Connection, tenant_id: TenantId, memory_id: int, visible: Visible | None
) -> memories.EditTarget:
    return _seen(memory_id, await memories.memory_for_edit(conn, tenant_id, memory_id), visible)


def _seen(
    memory_id: int, target: memories.EditTarget | None, visible: Visible | None
) -> memories.EditTarget:
    """The row, or NotFound when it is missing or of an agent the caller may not see
    (the same answer, so the two cannot be told apart)."""
    if target is None or (visible is not None and not visible(target.agent_name)):
        raise NotFound(f"Memory {memory_id} not found")
    return target


def _check_owner(memory_id: int, target: memories.EditTarget, agent_id: str) -> None:
    if agent_id and target.agent_name != agent_id:
        raise Refused(f"Memory {memory_id} not owned by agent {agent_id}")


async def update_memory(
    lib: Library,
    tenant_id: TenantId,
    memory_id: int,
    content: str,
    agent_id: str = "",
    guard: pauses.PauseGuard | None = None,
    visible: Visible | None = None,
    keep_history: bool = False,
) -> Updated:
    """Replace a memory's content; msg_id, timestamp, channel and project stay. With
    ``keep_history`` the content goes to a new record instead (``history.keep``).

    The row's embedding becomes NULL and a job is queued in the same transaction;
    the write-behind embedder embeds it moments later. With an inline timeout the
    new content is embedded before the transaction instead (after a cheap check that
    the edit is allowed, so a refused edit costs no embedding).
    Refused for CPersona's reasons; content equal to another row of the same
    exact bucket is a Conflict whose message is CPersona's UNIQUE failure. With
    ``guard`` the persistence pause is read first in each transaction (and before a
    refusal of the input): a pause raises WritePaused and nothing is written.
    """
    try:
        clean = _content(lib, memory_id, content)
    except (Refused, NotFound):
        await pauses.obey_now(lib, tenant_id, guard)
        raise
    if keep_history:
        kept = await history.keep(
            lib,
            tenant_id,
            memory_id,
            clean.text,
            lambda target: _check_edit(memory_id, target, agent_id, "edited", visible),
            guard,
        )
        return Updated(memory_id, clean.truncated, kept.new_id, kept.relation)
    inline = InlineEmbedding()
    if waits_for_vector(lib) and clean.text:
        async with lib.db.tenant_tx(tenant_id) as conn:
            await pauses.obey(conn, tenant_id, guard)
            _check_edit(
                memory_id,
                await memories.memory_for_edit(conn, tenant_id, memory_id),
                agent_id,
                "edited",
                visible,
            )
        inline = await embed_inline(lib, tenant_id, clean.text)
    edit = _Edit(memory_id, clean.text, agent_id, visible)
    try:
        await _apply_update(lib, tenant_id, edit, inline, guard)
    except Conflict as exc:
        columns = UNIQUE_COLUMNS.get(exc.message, exc.message)
        raise Conflict(f"UNIQUE constraint failed: {columns}") from None
    if inline.vector is None or passage_plan.may_need_passages(lib, clean.text):
        embed_soon(lib, tenant_id, "mem", memory_id)
    return Updated(memory_id, clean.truncated)


def _content(lib: Library, memory_id: int, content: str) -> text.Sanitised:
    """The sanitised new content; Refused for empty content, NotFound for an id no row
    can have."""
    if not content.strip():
        raise Refused("Content cannot be empty")
    _check_id(memory_id)
    return text.sanitise(content, lib.settings.max_content_length)


@dataclasses.dataclass(frozen=True, slots=True)
class _Edit:
    """One update_memory call: the row, its new (sanitised) content, who may edit it."""

    memory_id: int
    content: str
    agent_id: str
    visible: Visible | None


async def _apply_update(
    lib: Library,
    tenant_id: TenantId,
    edit: _Edit,
    inline: InlineEmbedding,
    guard: pauses.PauseGuard | None,
) -> None:
    """The update transaction, with the checks in the spec's order (the pause first)."""
    memory_id, content = edit.memory_id, edit.content
    async with lib.db.tenant_tx(tenant_id) as conn:
        await pauses.obey(conn, tenant_id, guard)
        target = await memories.memory_for_edit(conn, tenant_id, memory_id)
        _check_edit(memory_id, target, edit.agent_id, "edited", edit.visible)
        if not content:
            raise Refused("Content cannot be empty after sanitization")
        updated = await memories.update_memory_content(
            conn, tenant_id, memory_id, content, inline.vector, inline.model
        )
        if not updated:
            raise Refused(f"Memory {memory_id} is locked and cannot be edited")
        if inline.vector is not None and not passage_plan.may_need_passages(lib, content):
            await queue.delete_embedding_job(conn, tenant_id, "mem", memory_id)
        elif lib.queue_enabled:
            await queue.enqueue_embedding(conn, tenant_id, "mem", memory_id, inline.error)


def _check_edit(
    memory_id: int,
    target: memories.EditTarget | None,
    agent_id: str,
    verb: str,
    visible: Visible | None,
) -> None:
    """The spec's refusals of an edit by id: missing (or not visible), locked, another
    agent's."""
    target = _seen(memory_id, target, visible)
    if target.locked:
        raise Refused(f"Memory {memory_id} is locked and cannot be {verb}")
    _check_owner(memory_id, target, agent_id)


async def set_lock(
    lib: Library,
    tenant_id: TenantId,
    memory_id: int,
    locked: bool,
    agent_id: str = "",
    visible: Visible | None = None,
) -> LockSet:
    """Lock or unlock a memory (idempotent); owner-checked when agent_id is given."""
    _check_id(memory_id)
    async with lib.db.tenant_tx(tenant_id) as conn:
        target = await _target(conn, tenant_id, memory_id, visible)
        _check_owner(memory_id, target, agent_id)
        await memories.set_memory_lock(conn, tenant_id, memory_id, locked)
    return LockSet(memory_id, locked)


async def delete_memory(
    lib: Library,
    tenant_id: TenantId,
    memory_id: int,
    agent_id: str = "",
    visible: Visible | None = None,
) -> Deleted:
    """Delete one unlocked memory (docs/tools.md, "delete_memory"; its messages in CPersona's
    order); its queue job goes with it (a trigger of migration 0006). In the middle of a
    supersession chain, its successor then supersedes what it superseded (``relinked``)."""
    _check_id(memory_id)
    async with lib.db.tenant_tx(tenant_id) as conn:
        target = await _target(conn, tenant_id, memory_id, visible)
        if target.locked:
            raise Refused(f"Memory {memory_id} is locked and cannot be deleted")
        owner = agent_id or None
        found = await supersession.neighbours(conn, tenant_id, ("mem", memory_id))
        if not await memories.delete_unlocked_memory(conn, tenant_id, memory_id, owner):
            raise Refused(f"Memory {memory_id} not found, not owned by agent, or locked")
        relinked = await supersession.relink(conn, tenant_id, ("mem", memory_id), found)
    return Deleted(memory_id, tuple(relinked))
