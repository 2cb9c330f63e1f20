"""The cue arm of a recall with a time cue (docs/tools.md, "Time cues"): one statement
per stage (``recall_cue``, in ``sql/recall_cue.sql``), shaped and bound like the
lexical half of :mod:`service.db.recall`, whose scope and hits it shares."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from service.db.pool import Connection
from service.db.recall import Hit, Scope, omitted, scope_values, shape, width
from service.db.sql import QUERIES, VECTOR_DIMS, shaped_arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class CueSearch:
    """One stage of a recall's cue arm (``recall_cue``): the period ``[start, end)``, the
    query vector the ordinary arm embedded (None: keyword and full text only) and its
    cosine ``floor``, the ordinary arm's full-text query and patterns, whether the query
    is empty (then the period's newest rows), whether episodes are eligible, and the
    depth of each list."""

    start: datetime
    end: datetime
    vector: Sequence[float] | None
    floor: float
    tsquery: str | None
    lexemes: Sequence[str]
    patterns: Sequence[str]
    recency: bool
    episodes: bool
    depth: int


def cue_statement(scope: Scope, search: CueSearch) -> str:
    """``recall_cue`` of the query's width (384 when there is none), rendered for this
    call's shape as ``lexical_statement`` is (no integer written in)."""
    return shape(QUERIES[f"recall_cue_{width(search.vector)}"], omitted(scope), ())


def cue_values(tenant_id: TenantId, scope: Scope, search: CueSearch) -> dict[str, object]:
    """The named arguments of ``recall_cue`` for one period (a vector of a width no index
    serves binds as None): what :func:`cue_candidates` binds, and what a plan guard explains."""
    usable = search.vector is not None and len(search.vector) in VECTOR_DIMS
    return {
        **scope_values(tenant_id, scope),
        "start": search.start,
        "end": search.end,
        "vector": list(search.vector) if usable and search.vector is not None else None,
        "floor": search.floor,
        "tsquery": search.tsquery,
        "lexemes": list(search.lexemes),
        "patterns": list(search.patterns),
        "recency": search.recency,
        "episodes": search.episodes,
        "depth": search.depth,
    }


async def cue_candidates(
    conn: Connection, tenant_id: TenantId, scope: Scope, search: CueSearch
) -> list[Hit]:
    """The cue arm's lists for one period, as hits (channels ``cue_vector``, ``cue_text``,
    ``cue_recent``, ``cue_episode_vector``, ``cue_episode_text``; positions from 1)."""
    values = cue_values(tenant_id, scope, search)
    name = f"recall_cue_{width(search.vector)}"
    statement = cue_statement(scope, search)
    records = await conn.fetch(statement, *shaped_arguments(name, statement, values))
    return [
        Hit(
            r["channel"],
            r["kind"],
            r["id"],
            r["score"],
            r["position"],
            r["content"],
            r["source"],
            r["timestamp_text"],
            r["msg_id"],
            r["created_at"],
            r["resolved"],
        )
        for r in records
    ]
