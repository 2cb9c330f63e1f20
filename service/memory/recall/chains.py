"""Supersession in recall (docs/tools.md, "Facts that change"): after ranking, one
batched lookup of the returned rows' supersessions; a superseded row never ranks above
its successor, ``current_only`` leaves superseded rows out, ``as_of`` keeps the rows the
model holds then, and rows in a chain carry their validity and neighbours.

Without chains among the rows and without the two parameters, the answer is the ranked
rows unchanged: the cost is that one lookup.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from service.db.pool import Connection
from service.db.supersession import Ref
from service.memory import supersession
from service.memory.recall.records import Recalled, RecallRow
from service.models import TenantId

OVERFETCH = 3
"""A recall with ``as_of`` or ``current_only`` ranks this many times ``limit`` rows, then
keeps the first ``limit`` that hold (bounded by the deployment's maximum)."""


def _ref(row: RecallRow) -> Ref | None:
    if not isinstance(row, Recalled) or row.kind == "profile" or not row.ref:
        return None
    return (row.kind, row.id)


@dataclasses.dataclass(frozen=True, slots=True)
class Reading:
    """How a recall reads time: ``as_of`` (None: now, every record) and ``current_only``."""

    as_of: datetime | None = None
    current_only: bool = False

    @property
    def filters(self) -> bool:
        return self.as_of is not None or self.current_only


async def arrange(
    conn: Connection,
    tenant_id: TenantId,
    agent: str,
    rows: Sequence[RecallRow],
    reading: Reading,
) -> list[RecallRow]:
    """The ranked ``rows`` (best first) as the model reads them: filtered by ``reading``,
    successors moved above the records they supersede, chained rows annotated. One
    statement on ``conn``, the caller's transaction (recall shares it with its
    statistics, so the read costs no transaction of its own)."""
    refs = [ref for ref in map(_ref, rows) if ref is not None]
    if not refs:
        return list(rows)
    facts = await supersession.read_facts(
        conn, tenant_id, agent, refs, always=reading.as_of is not None
    )
    if not facts:
        return [] if reading.as_of is not None else list(rows)
    return _arranged(rows, facts, reading)


def _arranged(
    rows: Sequence[RecallRow], facts: dict[Ref, supersession.Fact], reading: Reading
) -> list[RecallRow]:
    by_ref: dict[Ref, RecallRow] = {}
    kept: list[RecallRow | None] = []
    for row in rows:
        ref = _ref(row)
        if ref is None:
            kept.append(row)
        elif supersession.kept(facts.get(ref), reading.as_of, reading.current_only):
            by_ref[ref] = row
            kept.append(None)  # a slot for a record, filled in model order below
    ordered = iter(supersession.successors_first(list(by_ref), facts))
    out: list[RecallRow] = []
    for slot in kept:
        if slot is not None:
            out.append(slot)
            continue
        ref = next(ordered)
        fact = facts.get(ref)
        row = by_ref[ref]
        if fact is not None and fact.chained and isinstance(row, Recalled):
            row = dataclasses.replace(row, fact=fact)
        out.append(row)
    return out
