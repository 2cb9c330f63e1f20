"""merge_memories: copy or move one agent's memory into another agent of the tenant.

(docs/portability.md, "Merging agents"). Memories are copied verbatim (no re-sanitising) with
embedding, lock, created_at and recall statistics, unless the target's exact bucket
already holds the msg_id or the content (the unique indexes decide); episodes
unless the target has the same (project, channel, summary); a profile only
where the target has none for that user_id. ``move`` then deletes exactly the
source rows that were copied (a skipped row stays where it is, reported in
``left_at_source``); the agent itself, with its calibration, goes only when
nothing is left.

Everything is one transaction. The source is walked in id-ordered chunks, one
set-based statement each, so memory stays flat for any agent size. A dry run
runs the very same statements and rolls them back, so it reports exactly the
counts the real run then produces and writes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from service.db import agents, associations as graph_queries, portability as portability_queries
from service.db.pool import Connection
from service.errors import Refused
from service.memory.library import Library
from service.memory.portability import graph
from service.memory.portability.import_ import queue_embeddings
from service.memory.portability.outcomes import Merged, SourceDeleted
from service.memory.queue import backlog
from service.models import TenantId

CHUNK_ROWS = 1000
MODES = ("copy", "move")


@dataclasses.dataclass(frozen=True, slots=True)
class MergeRequest:
    source_agent_id: str
    target_agent_id: str
    strategy: str = "skip"
    mode: str = "copy"
    dry_run: bool = False


def validation_error(req: MergeRequest) -> str | None:
    """CPersona's refusal texts, checked in its order."""
    if not req.source_agent_id:
        return "source_agent_id is required"
    if not req.target_agent_id:
        return "target_agent_id is required"
    if req.source_agent_id == req.target_agent_id:
        return "source_agent_id and target_agent_id must differ"
    if req.strategy != "skip":
        return f"Unsupported strategy '{req.strategy}'. Currently supported: 'skip'"
    if req.mode not in MODES:
        return f"Invalid mode '{req.mode}'. Supported: 'copy', 'move'"
    return None


@dataclasses.dataclass
class _Totals:
    considered: int = 0
    copied: int = 0
    deleted: int = 0
    jobs_dropped: int = 0

    def add(self, chunk: portability_queries.MergeChunk) -> None:
        self.considered += chunk.considered
        self.copied += chunk.copied
        self.deleted += chunk.deleted
        self.jobs_dropped += chunk.jobs_dropped


@dataclasses.dataclass
class _Outcome:
    memories: _Totals = dataclasses.field(default_factory=_Totals)
    episodes: _Totals = dataclasses.field(default_factory=_Totals)
    profiles: portability_queries.ProfileMerge = dataclasses.field(
        default_factory=lambda: portability_queries.ProfileMerge(0, 0, 0)
    )
    left: portability_queries.ItemCounts = dataclasses.field(
        default_factory=lambda: portability_queries.ItemCounts(0, 0, 0)
    )


class _DryRun(Exception):
    """Rolls a dry run back, carrying what it did."""

    def __init__(self, outcome: _Outcome) -> None:
        super().__init__("dry run")
        self.outcome = outcome


async def _chunks(
    conn: Connection, tenant_id: TenantId, step: portability_queries.MergeStep, table: str
) -> _Totals:
    kind: Literal["mem", "ep"] = "mem" if table == "memories" else "ep"
    totals = _Totals()
    while True:
        chunk = await portability_queries.merge_chunk(conn, tenant_id, kind, step)
        if chunk.last_id is None:
            return totals
        totals.add(chunk)
        step = dataclasses.replace(step, after_id=chunk.last_id)


async def _merge(
    lib: Library, tenant_id: TenantId, conn: Connection, req: MergeRequest
) -> _Outcome:
    outcome = _Outcome()
    source = await agents.agent_id_by_name(conn, tenant_id, req.source_agent_id)
    if source is None:
        return outcome
    target = await agents.ensure_agent(conn, tenant_id, req.target_agent_id)
    move = req.mode == "move"
    step = portability_queries.MergeStep(source, target, 0, CHUNK_ROWS, move, queue_embeddings(lib))
    declarations, importer = await graph.carry(conn, tenant_id, source, target)
    outcome.memories = await _chunks(conn, tenant_id, step, "memories")
    outcome.episodes = await _chunks(conn, tenant_id, step, "episodes")
    await graph.carried(importer, declarations, target)
    if move:
        await graph_queries.delete_agent_graph(conn, tenant_id, source)
    outcome.profiles = await portability_queries.merge_profiles(
        conn, tenant_id, source, target, move
    )
    if move:
        outcome.left = await portability_queries.item_counts(conn, tenant_id, source)
        if not any(dataclasses.astuple(outcome.left)):
            await agents.delete_agent(conn, tenant_id, source)  # its calibration goes with it
    return outcome


def _merged(req: MergeRequest, outcome: _Outcome) -> Merged:
    mem, eps, prof = outcome.memories, outcome.episodes, outcome.profiles
    deleted: SourceDeleted | None = None
    if req.mode == "move":
        deleted = SourceDeleted(
            agent_id=req.source_agent_id,
            deleted_memories=mem.deleted,
            deleted_profiles=prof.deleted,
            deleted_episodes=eps.deleted,
            deleted_pending_tasks=mem.jobs_dropped + eps.jobs_dropped,
        )
    return Merged(
        dry_run=req.dry_run,
        source_agent_id=req.source_agent_id,
        target_agent_id=req.target_agent_id,
        strategy=req.strategy,
        mode=req.mode,
        merged_memories=mem.copied,
        skipped_memories=mem.considered - mem.copied,
        merged_episodes=eps.copied,
        skipped_episodes=eps.considered - eps.copied,
        profile_copied=prof.copied > 0,
        skipped_profile=prof.considered > prof.copied,
        source_deleted=deleted,
        left_at_source=outcome.left if req.mode == "move" else None,
    )


def _aborted(req: MergeRequest, reason: str) -> Refused:
    return Refused(
        f"merge aborted and rolled back: {reason}",
        dry_run=req.dry_run,
        source_agent_id=req.source_agent_id,
        target_agent_id=req.target_agent_id,
        merged_memories=0,
        skipped_memories=0,
        merged_episodes=0,
        skipped_episodes=0,
        profile_copied=False,
        skipped_profile=False,
    )


async def merge_memories(lib: Library, tenant_id: TenantId, req: MergeRequest) -> Merged:
    """Copy or move ``source`` into ``target`` in one transaction; what it did.

    A dry run also reports ``source_deleted``/``left_at_source`` for a move:
    they are the real run's numbers, since the same statements ran.
    """
    problem = validation_error(req)
    if problem is not None:
        raise Refused(problem)
    try:
        async with lib.db.tenant_tx(tenant_id) as conn:
            outcome = await _merge(lib, tenant_id, conn, req)
            if req.dry_run:
                raise _DryRun(outcome)
    except _DryRun as rolled_back:
        outcome = rolled_back.outcome
    except portability_queries.WriteRefused as exc:
        raise _aborted(req, exc.message) from None
    if not req.dry_run:  # copies keep their vectors: their passages are queued now
        await backlog.queue_passages_after_bulk(lib, tenant_id)
    return _merged(req, outcome)
