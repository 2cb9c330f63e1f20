"""The candidate pool: one candidate recall at depth ``top_k``, then, in one statement,
the stored fields bundling reads of its rows and the record links among them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime

from service.db import reconstruct as queries
from service.memory.library import Library
from service.memory.recall import pipeline as recall
from service.memory.recall.records import Recalled, RecallResult
from service.memory.recall.time import parse_timestamp
from service.memory.reconstruct.records import RecalledRef, Row
from service.memory.reconstruct.request import ReconstructRequest
from service.models import TenantId


def recall_request(
    req: ReconstructRequest, top_k: int, terms: Sequence[str]
) -> recall.RecallRequest:
    """The candidate recall: ``limit = top_k`` (never derived from ``count``), the same
    scope, ``deep``, time cue, ``as_of`` and ``current_only``, and the expansion's terms
    for the lexical arms."""
    return recall.RecallRequest(
        agent_id=req.agent_id,
        query=req.query,
        limit=top_k,
        deep=req.deep,
        channel=req.channel,
        project_id=req.project_id,
        source_id=req.source_id,
        paused=req.paused,
        extra_lexical_terms=tuple(terms),
        time_cue=req.time_cue,
        as_of=req.as_of,
        current_only=req.current_only,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Pool:
    """The candidates best first (rank = position), how many recall rows had no ref,
    how many rows recall returned inside its limit, the record links, the recall's
    answer (for its notices), and whether a candidate mentions a declared entity (else
    the relation walk has no start)."""

    rows: list[Row]
    excluded: int
    within_limit: int
    links: list[queries.Link]
    recalled: RecallResult
    mentioned: bool = False


def recalled_refs(result: RecallResult) -> tuple[RecalledRef, ...]:
    """The candidate recall's rows best first, as the trace shows them (refs and match
    reasons, never text)."""
    return tuple(
        RecalledRef(row.ref, row.match_reason) for row in result.rows if isinstance(row, Recalled)
    )


def reserved(row: Recalled) -> bool:
    """Whether the candidate recall seated ``row`` in a held place (its match reason
    says ``admission: reservation``); such rows never compete for the window."""
    return row.match_reason is not None and dict(row.match_reason).get("admission") == "reservation"


async def candidate_pool(
    lib: Library,
    tenant_id: TenantId,
    req: ReconstructRequest,
    scope: queries.Scope,
    top_k: int,
    terms: Sequence[str],
    as_of: datetime | None = None,
) -> Pool:
    """The candidates of ``req``; the record links among them are those declared at or
    before ``as_of`` (all when None)."""
    result = await recall.recall(lib, tenant_id, recall_request(req, top_k, terms))
    recalled = [r for r in result.rows if isinstance(r, Recalled)]
    with_ref = [r for r in recalled if r.ref is not None and r.kind in ("mem", "ep")]
    excluded = len(result.rows) - len(with_ref)
    within = sum(1 for r in recalled if not reserved(r))
    if not with_ref:
        return Pool([], excluded, within, [], result)
    memories = [r.id for r in with_ref if r.kind == "mem"]
    episodes = [r.id for r in with_ref if r.kind == "ep"]
    async with lib.db.tenant_tx(tenant_id) as conn:
        found = await queries.rows(conn, tenant_id, scope, memories, episodes, as_of)
    by_ref = {f"{s.kind}:{s.id}": s for s in found.stored}
    read = [candidate_row(r, rank, by_ref) for rank, r in enumerate(with_ref)]
    rows = [row for row in read if row is not None]
    return Pool(rows, excluded, within, found.links, result, found.mentioned)


EPISODE_LABEL = "[Episode] "
"""What recall's content puts before an episode's summary."""


def candidate_row(
    recalled: Recalled, rank: int, stored: Mapping[str, queries.Stored]
) -> Row | None:
    """A candidate as the stages read it, from its stored fields and the recall's chain
    facts; None for a row deleted between the recall and this read: the answer never
    cites a record that is gone."""
    found = stored.get(recalled.ref or "")
    if found is None:
        return None
    row = stored_row(found, rank)
    same = recalled.content in (found.text, EPISODE_LABEL + found.text)
    passage = recalled.passage if same else None
    return dataclasses.replace(
        row, reserved=reserved(recalled), fact=recalled.fact, passage=passage
    )


def stored_row(found: queries.Stored, rank: int) -> Row:
    """A stored record (a candidate, or a record the walk reached) as a row."""
    row = row_of(
        f"{found.kind}:{found.id}",
        found.text,
        found.stamp,
        found.msg_id,
        found.source,
        (found.project_id, found.channel),
        rank,
    )
    if found.kind != "ep":
        return row
    start = parse_timestamp(found.start_time) if found.start_time else None
    end = parse_timestamp(found.end_time) if found.end_time else None
    return dataclasses.replace(row, start=start, end=end)


def row_of(
    ref: str,
    text: str,
    stamp: str,
    msg_id: str,
    source: object,
    context: tuple[str, str] | None,
    rank: int,
) -> Row:
    kind, _, raw = ref.partition(":")
    return Row(
        ref=ref,
        kind="ep" if kind == "ep" else "mem",
        id=int(raw),
        text=text,
        as_of=stamp,
        at=parse_timestamp(stamp) if stamp else None,
        msg_id=msg_id.strip(),
        source_type=_field(source, "type"),
        source_id=_field(source, "id").strip(),
        project_id=None if context is None else context[0],
        channel=None if context is None else context[1],
        start=None,
        end=None,
        rank=rank,
    )


def _field(source: object, key: str) -> str:
    """One field of a source document as text ('' when absent, null or not a document)."""
    value = source.get(key) if isinstance(source, Mapping) else None
    return "" if value is None else str(value)
