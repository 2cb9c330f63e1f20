"""The reconstruct pipeline (docs/tools.md, "reconstruct"): cues, one candidate recall,
bundling, the window and held clusters, the relation walk, structuring. It calls no
model, composes no text and writes nothing (the candidate recall's statistics credit
aside). Returns a :class:`Reconstruction`; quoting and budgets are the boundary's."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.config import Settings
from service.db import reconstruct as queries, walks
from service.memory.library import Library
from service.memory.recall import query_terms
from service.memory.reconstruct import candidates, cues, walk
from service.memory.reconstruct.bundle import bundle
from service.memory.reconstruct.count import resolve_count
from service.memory.reconstruct.records import (
    Bounds,
    Cues,
    Item,
    Reconstruction,
    Row,
    Shortfall,
    Trace,
)
from service.memory.reconstruct.request import (
    MAX_EVIDENCE,
    MAX_HOPS,
    MAX_TOP_K,
    ReconstructRequest,
    check_request,
)
from service.memory.reconstruct.structure import structure
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class _Breadth:
    top_k: int
    max_hops: int
    max_evidence: int
    lowered: bool


def _breadth(req: ReconstructRequest, settings: Settings) -> _Breadth:
    """The breadth bounds: the operator's defaults for omitted values
    (``CPERSONA_RECONSTRUCT_TOP_K``, ``_MAX_HOPS``, ``_MAX_EVIDENCE``), ``top_k`` in
    [1, 100]; a ``max_hops`` above 5 or ``max_evidence`` above 100 is lowered, and says so."""
    top_k = min(max(settings.reconstruct_top_k if req.top_k is None else req.top_k, 1), MAX_TOP_K)
    hops = max(0, settings.reconstruct_max_hops if req.max_hops is None else req.max_hops)
    evidence = req.max_evidence
    evidence = max(1, settings.reconstruct_max_evidence if evidence is None else evidence)
    lowered = hops > MAX_HOPS or evidence > MAX_EVIDENCE
    return _Breadth(top_k, min(hops, MAX_HOPS), min(evidence, MAX_EVIDENCE), lowered)


def choose(
    clusters: Sequence[list[int]], rows: Sequence[Row], effective: int
) -> tuple[list[list[int]], list[list[int]]]:
    """The window and the held clusters, from clusters in item order: the window is the
    first ``effective`` clusters holding a row the gate admitted; held are the clusters
    outside it holding a reserved row (never competing for the window, after it; none
    when the window is 0)."""
    window = [c for c in clusters if any(not rows[i].reserved for i in c)][:effective]
    if effective <= 0:
        return window, []
    held = [c for c in clusters if c not in window and any(rows[i].reserved for i in c)]
    return window, held


def scope_of(req: ReconstructRequest) -> queries.Scope:
    pattern = query_terms.like_pattern(req.source_id)[1:] if req.source_id else None
    return queries.Scope(req.agent_id, req.project_id, req.channel, pattern)


async def reconstruct(lib: Library, tenant_id: TenantId, req: ReconstructRequest) -> Reconstruction:
    """Items best first for ``req``; InvalidInput for a request over its bounds."""
    check_request(req)
    settings = lib.settings
    count = resolve_count(
        req.count,
        req.mode,
        default=settings.reconstruct_default_count,
        maximum=settings.reconstruct_max_count,
        forced=settings.reconstruct_forced_count,
    )
    breadth = _breadth(req, settings)
    scope = scope_of(req)
    found = Cues()
    if req.query.strip():
        async with lib.db.tenant_tx(tenant_id) as conn:
            found = await cues.expand(conn, tenant_id, scope, req.query)
    pool = await candidates.candidate_pool(lib, tenant_id, req, scope, breadth.top_k, found.terms)
    rows = pool.rows
    uf = bundle(rows, pool.links, settings.reconstruct_adjacency_seconds)
    clusters = sorted(uf.clusters(), key=lambda members: min(rows[i].rank for i in members))
    window, held = choose(clusters, rows, count.effective)
    chosen = window + held
    why = {rows[i].ref: key for i, key in uf.why.items()}
    items = await _items(lib, tenant_id, req, scope, breadth, rows, chosen, len(window), why, pool)
    reached = ("top_k",) if pool.within_limit >= breadth.top_k else ()
    bounds = Bounds(
        breadth.top_k, breadth.max_hops, breadth.max_evidence, breadth.lowered, (), reached
    )
    result = Reconstruction(
        items=tuple(items),
        count=count,
        bounds=bounds,
        candidate_count=len(rows),
        cluster_count=len(clusters),
        excluded_without_provenance=pool.excluded,
        shortfall=None,
        trace=Trace(
            tuple(r.ref for r in rows),
            tuple(tuple(rows[i].ref for i in c) for c in uf.clusters()),
            found,
        ),
        query=req.query,
        mode=req.mode,
        advisory=pool.recalled.advisory,
        gate_fallback=pool.recalled.gate_fallback,
        time_cue=pool.recalled.time_cue,
    )
    return dataclasses.replace(
        result, bounds=result.bounds_for(len(items)), shortfall=_shortfall(result)
    )


def _shortfall(result: Reconstruction) -> Shortfall | None:
    """Why fewer window items than the window came back (the library's reasons)."""
    if result.count.effective == 0:
        return "count_zero"
    if result.window_count >= result.count.effective:
        return None
    if result.gate_fallback:
        return "below_quality_threshold"
    return "no_relevant_evidence" if not result.candidate_count else "exhausted_candidates"


async def _items(
    lib: Library,
    tenant_id: TenantId,
    req: ReconstructRequest,
    scope: queries.Scope,
    breadth: _Breadth,
    rows: Sequence[Row],
    chosen: Sequence[list[int]],
    window: int,
    why: dict[str, str],
    pool: candidates.Pool,
) -> list[Item]:
    """Walk (skipped under a mode, and when no candidate mentions an entity: no start) and
    structure the chosen clusters, in item order."""
    members = [[rows[i] for i in c] for c in chosen]
    walks = [walk.ItemWalk((), False, False) for _ in chosen]
    stored: dict[str, queries.Stored] = {}
    if req.mode is None and chosen and pool.mentioned:
        graph = await _graph(lib, tenant_id, scope, breadth, rows, members)
        refs = [[row.ref for row in group] for group in members]
        pool_refs = frozenset(row.ref for row in rows)
        walks = walk.walk(refs, pool_refs, graph, breadth.max_hops, breadth.max_evidence)
        stored = graph.stored
    items: list[Item] = []
    for position, (group, walked) in enumerate(zip(members, walks, strict=True)):
        extra = [
            (candidates.stored_row(stored[w.ref], len(rows)), w.why, w.hops)
            for w in walked.walked
            if w.ref in stored
        ]
        item = structure(
            group, why, breadth.max_evidence, extra, pool.links, held=position >= window
        )
        omitted = [
            name
            for name, on in (
                ("max_evidence", item.claims_omitted > 0),
                ("max_hops", walked.hops_cut),
            )
            if on
        ]
        met = ("max_evidence",) if walked.evidence_cut else ()
        items.append(dataclasses.replace(item, omitted=tuple(omitted), reached=met))
    return items


async def _graph(
    lib: Library,
    tenant_id: TenantId,
    scope: queries.Scope,
    breadth: _Breadth,
    rows: Sequence[Row],
    members: Sequence[Sequence[Row]],
) -> walks.WalkGraph:
    """The graph the walk may follow, in one statement (``reconstruct_walk``)."""
    starts = [row for group in members for row in group]
    request = walks.WalkRequest(
        start_memories=sorted({r.id for r in starts if r.kind == "mem"}),
        start_episodes=sorted({r.id for r in starts if r.kind == "ep"}),
        pool_memories=sorted({r.id for r in rows if r.kind == "mem"}),
        pool_episodes=sorted({r.id for r in rows if r.kind == "ep"}),
        max_hops=breadth.max_hops,
        per_entity=breadth.max_evidence + 1,
    )
    async with lib.db.tenant_tx(tenant_id) as conn:
        return await walks.walk_graph(conn, tenant_id, scope, request)
