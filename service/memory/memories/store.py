"""Memory writes with CPersona's semantics (docs/tools.md, "Writes"): store.

Every write is one transaction; embedding happens before it, never inside.
A store answers a typed :data:`StoreOutcome` (:class:`Stored` or :class:`Skipped`; a rejected
write raises Refused); the MCP boundary renders it (``service.mcp.render.writes``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from service.db import memories
from service.db.pool import Connection
from service.errors import Refused
from service.memory import associations, bounds, future, pauses, superseding, text
from service.memory.associations import Declared
from service.memory.library import Library
from service.memory.memories import edits
from service.memory.passages import plan as passage_plan
from service.memory.queue.inline import (
    InlineEmbedding,
    embed_inline,
    embed_soon,
    waits_for_vector,
)
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class StoreRequest:
    agent_id: str
    message: Mapping[str, Any]
    channel: str = ""
    project_id: str = ""
    associations: Mapping[str, Any] | None = None
    """The ``associations`` rider (docs/tools.md, "store"): declared after the memory
    commits, anchored on it; None or empty declares nothing and costs nothing."""
    lock: bool = False
    """Lock the row the store resolved to (new, or the existing row a dedup skip names), as
    lock_memory does, after it commits (CPersona 2.6's ``lock: true``)."""
    supersedes: object = None
    """The ``supersedes`` list (docs/tools.md, "Facts that change"): the records the new
    one replaces, declared after it commits; None declares nothing and costs nothing."""


SkipReason = Literal["duplicate msg_id", "duplicate content", "duplicate (unique index)"]


@dataclasses.dataclass(frozen=True, slots=True)
class Stored:
    """A new row: its id, whether its vector came with it (an inline embedding in time), and
    whether its content was cut to the content limit."""

    memory_id: int
    embedded: bool
    truncated: bool = False
    associations: Declared | None = None
    """What the rider declared (None without one)."""
    locked: bool | None = None
    """Whether ``lock`` locked the row (None: no lock asked)."""
    ahead_of_clock: future.AheadOfClock | None = None
    """The caller's timestamp lay past the allowance ahead of the server's clock (mode
    ``warn``); None otherwise."""
    supersedes: superseding.Superseding | None = None
    """What the ``supersedes`` list declared (None without one)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Skipped:
    """Nothing stored: a duplicate in scope (docs/tools.md, "Dedup scopes"). ``existing_id``
    is the row it duplicates; None when a concurrent store's unique index absorbed it."""

    reason: SkipReason
    existing_id: int | None
    associations: Declared | None = None
    """What the rider declared on the existing row (None without one, or without an id)."""
    locked: bool | None = None
    """Whether ``lock`` locked the existing row (None: no lock asked; False without an id)."""
    supersedes: superseding.Superseding | None = None
    """What the ``supersedes`` list declared for the existing row (as ``associations``)."""


StoreOutcome = Stored | Skipped
"""What a store did; a rejected store raises Refused instead (docs/tools.md, "Store steps")."""


def _scope(value: str) -> list[str]:
    """Dedup scope set (docs/tools.md, "Dedup scopes"): {X, ''} for a bucket X, {''} for the global
    pool."""
    return [value, ""] if value else [""]


def _size_refusal(lib: Library, source: object, metadata: object) -> str | None:
    limit = lib.settings.max_metadata_length
    for name, value in (("source", source), ("metadata", metadata)):
        size = text.serialised_length(value)
        if size > limit:
            return f"{name} too large ({size} chars, max {limit})"
    return None


def _axis_refusal(lib: Library, req: StoreRequest, msg_id: str) -> str | None:
    limit = lib.settings.max_axis_length
    for name, value in (
        ("agent_id", req.agent_id),
        ("project_id", req.project_id),
        ("channel", req.channel),
    ):
        if len(value) > limit:
            return f"{name} too long ({len(value)} chars, max {limit})"
    if len(msg_id) > lib.settings.max_msg_id_length:
        return f"message.id too long ({len(msg_id)} chars, max {lib.settings.max_msg_id_length})"
    stamp = req.message.get("timestamp")
    if isinstance(stamp, str) and len(stamp) > bounds.NAME_CHARS:
        return bounds.too_long("message/timestamp", len(stamp), bounds.NAME_CHARS)
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Prepared:
    row: memories.NewMemory
    truncated: bool
    ahead_of_clock: future.AheadOfClock | None = None


def _refusal(lib: Library, req: StoreRequest, source: object, metadata: object) -> str | None:
    message = dict(req.message)
    msg_id = message.get("id")
    msg_id = msg_id if isinstance(msg_id, str) else ""
    refusal = _size_refusal(lib, source, metadata) or _axis_refusal(lib, req, msg_id)
    if refusal is None:
        refusal = text.text_problem([req.agent_id, req.project_id, req.channel, message])
    return refusal


def _prepare(lib: Library, req: StoreRequest) -> _Prepared:
    """Steps 2-5 of docs/tools.md, "Store steps": defaults, refusals (Refused: ``result:
    rejected``), sanitising."""
    message = req.message
    raw = message.get("content")
    if not isinstance(raw, str) or not raw:
        raise Refused("empty content")
    source = text.normalise_source(message.get("source"))
    metadata = message.get("metadata")
    metadata = {} if metadata is None else metadata
    refusal = _refusal(lib, req, source, metadata)
    if refusal:
        raise Refused(refusal)
    clean = text.sanitise(raw, lib.settings.max_content_length)
    if not clean.text:
        raise Refused("empty after sanitization")
    msg_id = message.get("id")
    stamp = message.get("timestamp")
    given = isinstance(stamp, str) and bool(stamp)
    stamp = stamp if isinstance(stamp, str) and stamp else text.now_timestamp()
    parsed = text.parse_timestamp(stamp)
    ahead = future.ahead_of_clock(lib, stamp, parsed, "timestamp") if given else None
    row = memories.NewMemory(
        agent_name=req.agent_id,
        project_id=req.project_id,
        channel=req.channel,
        msg_id=msg_id if isinstance(msg_id, str) else "",
        content=clean.text,
        source=source,
        timestamp_text=stamp,
        timestamp_at=parsed,
        metadata=metadata,
    )
    return _Prepared(row, clean.truncated, ahead)


def _duplicate(probe: memories.DuplicateProbe | memories.StoreResult) -> Skipped | None:
    if probe.duplicate_msg_id is not None:
        return Skipped("duplicate msg_id", probe.duplicate_msg_id)
    if probe.duplicate_content is not None:
        return Skipped("duplicate content", probe.duplicate_content)
    return None


def _store_outcome(
    result: memories.StoreResult, prepared: _Prepared, embedded: bool
) -> StoreOutcome:
    duplicate = _duplicate(result)
    if duplicate is not None:
        return duplicate
    if result.inserted_id is None:
        return Skipped("duplicate (unique index)", None)
    return Stored(
        result.inserted_id, embedded, prepared.truncated, ahead_of_clock=prepared.ahead_of_clock
    )


async def _probe(
    conn: Connection, tenant_id: TenantId, req: StoreRequest, row: memories.NewMemory
) -> Skipped | None:
    """The dedup answer before any embedding work (step 6 of docs/tools.md, "Store steps" precedes
    step 7)."""
    probe = await memories.probe_memory_duplicate(
        conn, tenant_id, req.agent_id, row, _scope(req.project_id), _scope(req.channel)
    )
    return _duplicate(probe)


async def store(
    lib: Library, tenant_id: TenantId, req: StoreRequest, guard: pauses.PauseGuard | None = None
) -> StoreOutcome:
    """Store one memory (:func:`store_row`), then the riders, each in a transaction of its
    own, on the stored row or on the existing row a dedup skip names: the ``associations``
    rider, if any (a failure is reported in its ``dropped``), the ``supersedes`` list, if
    any (docs/tools.md, "Facts that change"), then the ``lock``, if asked.
    The memory stays stored whatever a rider does. Without riders this is
    :func:`store_row` alone."""
    outcome = await store_row(lib, tenant_id, req, guard)
    memory_id = outcome.memory_id if isinstance(outcome, Stored) else outcome.existing_id
    if req.associations and memory_id is not None:
        declared = await associations.declare_rider(
            lib,
            tenant_id,
            req.agent_id,
            f"mem:{memory_id}",
            req.associations,
            scope=(req.project_id, req.channel),
        )
        outcome = dataclasses.replace(outcome, associations=declared)
    if req.supersedes is not None and memory_id is not None:
        rider = superseding.Rider(
            agent_id=req.agent_id,
            newer=("mem", memory_id),
            refs=req.supersedes,
            project_id=req.project_id,
            channel=req.channel,
        )
        replaced = await superseding.declare(lib, tenant_id, rider)
        outcome = dataclasses.replace(outcome, supersedes=replaced)
    if req.lock:
        locked = await _lock_row(lib, tenant_id, req.agent_id, memory_id)
        outcome = dataclasses.replace(outcome, locked=locked)
    return outcome


async def _lock_row(
    lib: Library, tenant_id: TenantId, agent_id: str, memory_id: int | None
) -> bool:
    """Lock the row a store resolved to; False when it resolved to none (the id-less
    unique-index race) or the row is gone by now (a concurrent delete)."""
    if memory_id is None:
        return False
    try:
        await edits.set_lock(lib, tenant_id, memory_id, True, agent_id)
    except Refused:
        return False
    return True


async def store_row(
    lib: Library, tenant_id: TenantId, req: StoreRequest, guard: pauses.PauseGuard | None = None
) -> StoreOutcome:
    """Store one memory: refusals, dedup probes, embedding, insert.

    A refused write raises Refused (the tool answers ``result: "rejected"``). There is no
    upsert: a known msg_id or identical content in scope is :class:`Skipped`
    with the existing id. Concurrent identical stores insert one row;
    the unique indexes absorb the rest ("duplicate (unique index)", no id). With
    ``guard`` the persistence pause is read in the write's transaction and a pause raises
    WritePaused, for bad input too (bad input under a pause is skipped, not refused).

    By default (inline timeout 0) the row is inserted with its embedding job and
    answered at once (``embedded: false``); the write-behind embedder embeds it moments
    later. The transaction is one statement (``store_memory``: the pause, agent, probes,
    insert and job), so a store costs the tenant setup and one round trip.
    """
    if waits_for_vector(lib):
        return await _store_with_vector(lib, tenant_id, req, guard)
    deferred = InlineEmbedding()  # no vector yet: queued, embedded after the commit
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        prepared = await _prepare_obeying(conn, lib, tenant_id, req, guard)
        result = await _insert(conn, lib, tenant_id, req, prepared.row, deferred, guard)
    return _answered(lib, tenant_id, result, prepared, deferred)


async def _prepare_obeying(
    conn: Connection,
    lib: Library,
    tenant_id: TenantId,
    req: StoreRequest,
    guard: pauses.PauseGuard | None,
) -> _Prepared:
    """:func:`_prepare`, except that input it refuses is first checked against the pause
    (WritePaused wins over Refused): the read costs a round trip only on the refusal path,
    the write statement reads the pause itself."""
    try:
        return _prepare(lib, req)
    except Refused:
        await pauses.obey(conn, tenant_id, guard)
        raise


async def _store_with_vector(
    lib: Library, tenant_id: TenantId, req: StoreRequest, guard: pauses.PauseGuard | None
) -> StoreOutcome:
    """store with an inline timeout: a read-only dedup probe first so a duplicate is
    never embedded, the content embedded *outside* any transaction, then the insert
    transaction, which probes again (race-safe) and queues the row when the embedding
    did not come in time (durable)."""
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        await pauses.obey(conn, tenant_id, guard)
        prepared = _prepare(lib, req)
        duplicate = await _probe(conn, tenant_id, req, prepared.row)
    if duplicate is not None:
        return duplicate
    inline = await embed_inline(lib, tenant_id, prepared.row.content)
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        result = await _insert(conn, lib, tenant_id, req, prepared.row, inline, guard)
    return _answered(lib, tenant_id, result, prepared, inline)


async def _insert(
    conn: Connection,
    lib: Library,
    tenant_id: TenantId,
    req: StoreRequest,
    row: memories.NewMemory,
    inline: InlineEmbedding,
    guard: pauses.PauseGuard | None,
) -> memories.StoreResult:
    """The write itself: the row with its vector when it has one, else with its job;
    with ``guard``, nothing and WritePaused when the statement finds a pause in force."""
    row = dataclasses.replace(row, embedding=inline.vector, embedding_model=inline.model)
    queued = lib.queue_enabled and (
        inline.vector is None or passage_plan.may_need_passages(lib, row.content)
    )
    job = memories.QueuedJob(inline.error) if queued else None
    obeying = None if guard is None else pauses.pausable_key(guard.session_key)
    result = await memories.store_memory(
        conn, tenant_id, row, _scope(req.project_id), _scope(req.channel), job, obeying
    )
    if result.pause is not None:
        raise pauses.WritePaused(pauses.active_of(result.pause))
    return result


def _answered(
    lib: Library,
    tenant_id: TenantId,
    result: memories.StoreResult,
    prepared: _Prepared,
    inline: InlineEmbedding,
) -> StoreOutcome:
    """After the commit: hand a row without a vector to the write-behind, then answer."""
    later = inline.vector is None or passage_plan.may_need_passages(lib, prepared.row.content)
    if result.inserted_id is not None and later:
        embed_soon(lib, tenant_id, "mem", result.inserted_id)
    return _store_outcome(result, prepared, inline.vector is not None)
