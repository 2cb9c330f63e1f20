"""The cue arm of a recall with a time cue (docs/tools.md, "Time cues"): one statement
per stage (``recall_cue`` for a narrow period, ``recall_cue_wide`` for a wide one, in
``sql/recall_cue.sql``), shaped and bound like the lexical half of
:mod:`service.db.recall`, whose scope and hits it shares; before it, in the same
transaction, ``cue_period_size`` tells the two periods apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from service.db.pool import Connection
from service.db.recall import Hit, Scope, omitted, scope_values, shape, width
from service.db.sql import QUERIES, VECTOR_DIMS, shaped_arguments
from service.models import TenantId

NARROW_ROWS: Final = 5_000
"""The most memories of the agent a period may hold for the cue to read it whole
(``recall_cue``: every memory of the period, the newest 10,000 embedded ones scored
exactly); past it the cue finds its lists through the indexes (``recall_cue_wide``).
Measured at 100k memories (docs/reliability.md, "Wide time cues"): the two statements cost
about the same up to about 4,000 rows (41 against 40 ms at 4,119); past it the exact one
grows with the period (60 ms at 6,226, 306 ms at 50,000) while the index walk stays at
36-80 ms. Below the cap the exact answer costs no more, so it is kept."""


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


def cue_name(search: CueSearch, wide: bool) -> str:
    """The name of the cue statement of the query's width (384 when there is none):
    ``recall_cue_<width>``, or ``recall_cue_wide_<width>`` for a wide period."""
    return f"recall_cue{'_wide' if wide else ''}_{width(search.vector)}"


def cue_statement(scope: Scope, search: CueSearch, *, wide: bool = False) -> str:
    """``recall_cue`` (``recall_cue_wide`` when ``wide``) of the query's width, rendered
    for this call's shape as ``lexical_statement`` is (no integer written in)."""
    dim = width(search.vector)
    query = QUERIES[f"recall_cue_wide_{dim}"] if wide else QUERIES[f"recall_cue_{dim}"]
    return shape(query, omitted(scope), ())


async def is_wide(conn: Connection, tenant_id: TenantId, scope: Scope, search: CueSearch) -> bool:
    """Whether the period holds more than :data:`NARROW_ROWS` of the agent's memories
    (``cue_period_size``: an index walk that stops one row past the cap)."""
    size = await conn.fetchval(
        QUERIES["cue_period_size"], tenant_id, scope.agent, search.start, search.end, NARROW_ROWS
    )
    return int(size) > NARROW_ROWS


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
    ``cue_recent``, ``cue_episode_vector``, ``cue_episode_text``; positions from 1),
    through ``recall_cue`` or, for a wide period (:func:`is_wide`), ``recall_cue_wide``."""
    values = cue_values(tenant_id, scope, search)
    wide = await is_wide(conn, tenant_id, scope, search)
    name = cue_name(search, wide)
    statement = cue_statement(scope, search, wide=wide)
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
