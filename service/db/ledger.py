"""Storage of the session ledger: one function for the named query of ``sql/ledger.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class Offered:
    """A row one answer offers, best first: its identity, token costs and whether it
    would be delivered whole (only whole deliveries are recorded)."""

    kind: str
    row_id: int
    cost: int
    stub_cost: int
    whole: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Exchange:
    """What the statement found and did: held positions (0-based), rows recorded, deleted."""

    held: frozenset[int]
    recorded: int
    swept: int


async def ledger_deliver(
    conn: Connection,
    tenant_id: TenantId,
    session_key: str,
    offered: Sequence[Offered],
    *,
    budget: int | None,
    look_up: bool,
    ttl_seconds: int,
    max_rows: int,
) -> Exchange:
    """Look up and record one answer's deliveries (see the query's description)."""
    record = await conn.fetchrow(
        QUERIES["ledger_deliver"],
        *arguments(
            "ledger_deliver",
            {
                "tenant_id": tenant_id,
                "session_key": session_key,
                "kinds": [o.kind for o in offered],
                "ids": [o.row_id for o in offered],
                "costs": [o.cost for o in offered],
                "stub_costs": [o.stub_cost for o in offered],
                "whole": [o.whole for o in offered],
                "budget": budget,
                "look_up": look_up,
                "ttl": ttl_seconds,
                "max_rows": max_rows,
            },
        ),
    )
    assert record is not None  # an aggregate query always returns its one row
    return Exchange(frozenset(record["held"]), record["recorded"], record["swept"])
