"""The recall pipeline (docs/architecture.md, "Recall"): retrieve, rank, advise.

``retrieve`` runs the two statements (``db.recall``) and the query's embedding beside
them; ``scoring`` ranks the rows in pure functions and builds the recalled rows; this module
puts them together, adds the degraded advisory and credits recall statistics. The
library returns full content: previews and budgets belong to the MCP boundary.
"""

from __future__ import annotations

import time

from service.db import recall_side
from service.db.pool import Connection
from service.memory import supersession
from service.memory.library import Library
from service.memory.memories.listing import clamp
from service.memory.recall import (
    advisory,
    candidate,
    chains,
    cued,
    exclusion,
    fusion,
    query_terms,
)
from service.memory.recall.records import Advisory, CueReport, Recalled, RecallResult, Severity
from service.memory.recall.request import (
    DEFAULT_LIMIT as DEFAULT_LIMIT,
    RecallRequest as RecallRequest,
    check_request as check_request,
)
from service.memory.recall.retrieve import (
    RUNNING,
    Embedded,
    Retrieved,
    depth_of,
    retrieval,
    retrieve,
    scope_of,
)
from service.memory.recall.scoring import RankedRows, cue_floor, ranked_body, vector_unseen
from service.models import JsonObject, TenantId


async def recall(lib: Library, tenant_id: TenantId, req: RecallRequest) -> RecallResult:
    """Hybrid recall for one agent: rows best first, with the gate's rescue and the
    degraded advisory noted; InvalidInput for a request over its bounds (``check_request``)."""
    started = time.perf_counter()
    check_request(req)
    reading = chains.Reading(
        supersession.parse_as_of(req.as_of) if req.as_of else None, req.current_only
    )
    wanted_rows = clamp(req.limit, 0, lib.settings.max_memories)
    limit = wanted_rows
    if reading.filters:
        limit = min(wanted_rows * chains.OVERFETCH, lib.settings.max_memories)
    mode = fusion.recall_mode(lib.settings.recall_mode, req.query)
    depth = depth_of(lib, limit, mode) if limit else 0
    scope = scope_of(req, reading.as_of)
    terms = query_terms.build(
        req.query, lib.settings.recall_max_terms, lib.settings.recall_max_patterns
    )
    wanted = retrieval(lib, req, depth, terms, mode)
    rows: tuple[Recalled, ...] = ()
    with RUNNING:
        async with retrieve(lib, tenant_id, req, scope, wanted, limit, mode) as got:
            ranked = _ranked(lib, req, got, mode, limit)
            if ranked is not None:  # one transaction with the retrieval: chains and credit
                rows = await _arranged(got.conn, tenant_id, req, reading, ranked, wanted_rows)
    notice = await _advisory(lib, tenant_id, got.found.meta, got.embedded)
    if ranked is None:
        return RecallResult(rows=(), advisory=notice)
    found, embedded = got.found, got.embedded
    cue_report: CueReport | None = None
    if req.time_cue is not None:
        arm = cued.CueArm(
            scope=scope,
            terms=terms,
            query=req.query,
            vector=embedded.vector,
            floor=cue_floor(lib, found.meta),
            episodes=wanted.episodes,
            exclusions=exclusion.normalise_exclusions(req.exclude_contents),
            started=started,
        )
        rows, cue_report = await _cued(lib, tenant_id, req, arm, found.meta, ranked, rows)
    return RecallResult(rows, ranked.gate_fallback, notice, time_cue=cue_report)


def _ranked(
    lib: Library, req: RecallRequest, got: Retrieved, mode: candidate.Mode, limit: int
) -> RankedRows | None:
    """The retrieved rows ranked (pure Python, no statement), or None for ``limit`` 0."""
    if not limit:
        return None
    hits = got.found.hits + got.fallback
    unseen = vector_unseen(lib, hits, got.embedded.vector)
    return ranked_body(lib, req, got.found.meta, hits, mode, limit, unseen)


async def _arranged(
    conn: Connection,
    tenant_id: TenantId,
    req: RecallRequest,
    reading: chains.Reading,
    ranked: RankedRows,
    wanted_rows: int,
) -> tuple[Recalled, ...]:
    """The answer's rows in model order (``chains.arrange``), their recall statistics
    credited, on ``conn``: the retrieval's transaction."""
    arranged = await chains.arrange(conn, tenant_id, req.agent_id, ranked.rows, reading)
    rows = tuple(row for row in arranged[:wanted_rows] if isinstance(row, Recalled))
    credited = ranked.credited
    if reading.filters:
        kept = {row.id for row in rows if row.kind == "mem"}
        credited = [memory_id for memory_id in credited if memory_id in kept]
    if credited:  # a cue's seats are never credited, so the cue may come after
        await recall_side.bump_recall_stats(conn, tenant_id, credited)
    return rows


async def _cued(
    lib: Library,
    tenant_id: TenantId,
    req: RecallRequest,
    arm: cued.CueArm,
    meta: JsonObject,
    ranked: RankedRows,
    rows: tuple[Recalled, ...],
) -> tuple[tuple[Recalled, ...], CueReport]:
    """The answer ``rows`` with the time cue applied (docs/tools.md, "Time cues"):
    unchanged when the cue is ignored; recall statistics stay credited to ``ranked``'s
    rows only."""
    assert req.time_cue is not None
    found = await cued.search(lib, tenant_id, req.time_cue, arm, cued.span_of(meta))
    if isinstance(found, cued.CueFound):
        return cued.apply(rows, found, ranked.reached, ranked.admitted)
    return rows, found


async def _advisory(
    lib: Library, tenant_id: TenantId, meta: JsonObject, embedded: Embedded
) -> Advisory | None:
    """The degraded advisory for this recall, recording state changes
    (docs/tools.md, "Degraded advisory")."""
    severity: Severity | None = None
    if lib.embedder is None:
        severity = "hint"
    elif embedded.failed:
        severity = "fault"
    if severity is None:
        if meta.get("advisory_state") not in (None, "healthy"):
            await _note_advisory(lib, tenant_id, "healthy", False)
        return None
    if not lib.settings.degraded_advisory:
        return None
    first = not meta.get("advisory_long_sent") or meta.get("advisory_state") == "healthy"
    if first or meta.get("advisory_state") != severity:
        first = not await _note_advisory(lib, tenant_id, severity, True) or first
    return advisory.advisory(severity, long_form=first)


async def _note_advisory(lib: Library, tenant_id: TenantId, state: str, long_form: bool) -> bool:
    """Record a change of advisory state, in a transaction of its own on the primary
    (a recall may read a replica, which takes no writes; changes are rare)."""
    async with lib.write_db.tenant_tx(tenant_id) as conn:
        return await recall_side.note_advisory(conn, tenant_id, state, long_form)
