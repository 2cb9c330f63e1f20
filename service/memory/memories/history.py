"""update_memory with ``keep_history`` (docs/tools.md, "Facts that change"): the new
text becomes a new memory that supersedes the old one, in one transaction.

The agent's graph lock is taken before the row lock (the order declarations take them:
the graph lock, then the foreign-key checks on the records), so an update and a
declaration naming the same memory queue instead of deadlocking. The new memory copies
the old one's agent, project, channel, source and metadata, has no msg_id (the old one
keeps it) and is stamped now; it is embedded by the write-behind like any store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from service.db import associations as graph, memories, supersession as chains
from service.errors import Conflict, Refused
from service.memory import pauses, supersession, text
from service.memory.library import Library
from service.memory.queue.inline import embed_soon
from service.models import TenantId

Check = Callable[[memories.EditTarget | None], None]
"""The refusals of an edit by id (missing, locked, another agent's), raised."""


@dataclasses.dataclass(frozen=True, slots=True)
class Kept:
    """The new memory and the supersession that links it to the old one."""

    new_id: int
    relation: int


def _scope(value: str) -> list[str]:
    return [value, ""] if value else [""]


async def keep(
    lib: Library,
    tenant_id: TenantId,
    memory_id: int,
    content: str,
    check: Check,
    guard: pauses.PauseGuard | None,
) -> Kept:
    """Write ``content`` as a new memory superseding ``memory_id``. Refused as an in-place
    edit is (``check``), and when the memory is already superseded (update its successor
    instead); Conflict when the new text is already a memory of the scope."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        await pauses.obey(conn, tenant_id, guard)
        base = await chains.memory_for_history(conn, tenant_id, memory_id)
        if base is not None:
            await graph.lock_agent_graph(conn, tenant_id, base.agent_id)
        target = await memories.memory_for_edit(conn, tenant_id, memory_id)
        check(target)
        assert target is not None  # check refused a missing row
        assert base is not None  # read before it, in the same transaction
        if not content:
            raise Refused("Content cannot be empty after sanitization")
        after = await chains.successor_of(conn, tenant_id, ("mem", memory_id))
        if after is not None:
            raise Refused(
                f"Memory {memory_id} is already superseded by "
                f"{supersession.ref_text(after[1])}: update that one"
            )
        stamp = text.now_timestamp()
        row = memories.NewMemory(
            agent_name=target.agent_name,
            project_id=base.project_id,
            channel=base.channel,
            msg_id="",
            content=content,
            source=base.source,
            timestamp_text=stamp,
            timestamp_at=text.parse_timestamp(stamp),
            metadata=base.metadata,
        )
        job = memories.QueuedJob() if lib.queue_enabled else None
        stored = await memories.store_memory(
            conn, tenant_id, row, _scope(base.project_id), _scope(base.channel), job
        )
        new_id = stored.inserted_id
        if new_id is None:
            same = stored.duplicate_content or stored.duplicate_msg_id
            raise Conflict(f"the new content is already memory {same} of this scope")
        newer = graph.End("mem", new_id)
        scope = graph.Scope(base.agent_id, base.project_id, base.channel)
        triple = (newer, supersession.PREDICATE, graph.End("mem", memory_id))
        relation = await graph.upsert_relation(conn, tenant_id, scope, triple, newer)
    embed_soon(lib, tenant_id, "mem", new_id)
    return Kept(new_id, relation)
