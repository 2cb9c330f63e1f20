"""Storage of daily usage counters (``sql/usage.sql``)."""

from __future__ import annotations

import dataclasses
from datetime import date

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class UsageRow:
    """One tenant's usage of one tool on one UTC day."""

    day: date
    tool: str
    calls: int
    failures: int
    bytes_out: int
    tokens_delivered: int
    tokens_saved_previews: int
    tokens_saved_excerpts: int
    tokens_saved_budgets: int
    tokens_saved_ledger: int

    @property
    def tokens_saved(self) -> int:
        return (
            self.tokens_saved_previews
            + self.tokens_saved_excerpts
            + self.tokens_saved_budgets
            + self.tokens_saved_ledger
        )


COUNTS = (
    "calls",
    "failures",
    "bytes_out",
    "chars_returned",
    "chars_saved",
    "tokens_delivered",
    "tokens_saved_previews",
    "tokens_saved_excerpts",
    "tokens_saved_budgets",
    "tokens_saved_ledger",
)
"""The counts ``add_usage`` adds, in the order its callers pass them."""


async def add_usage(
    conn: Connection,
    tenant_id: TenantId,
    day: date,
    tool: str,
    counts: tuple[int, ...],
) -> None:
    """Add (calls, failures, bytes_out, chars_returned, chars_saved, tokens_delivered,
    tokens saved by previews, excerpts, budgets, ledger) to one row."""
    values = {
        "tenant_id": tenant_id,
        "day": day,
        "tool": tool,
        **dict(zip(COUNTS, counts, strict=True)),
    }
    await conn.execute(QUERIES["add_usage"], *arguments("add_usage", values))


async def usage_report(conn: Connection, tenant_id: TenantId, days: int) -> list[UsageRow]:
    """The tenant's rows of the last ``days`` UTC days, newest first, then by tool."""
    records = await conn.fetch(QUERIES["usage_report"], tenant_id, days)
    return [UsageRow(**dict(record)) for record in records]
