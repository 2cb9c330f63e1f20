"""Storage of daily usage counters (``sql/usage.sql``)."""

from __future__ import annotations

from datetime import date

from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


async def add_usage(
    conn: Connection,
    tenant_id: TenantId,
    day: date,
    tool: str,
    counts: tuple[int, int, int, int, int],
) -> None:
    """Add (calls, failures, bytes_out, chars_returned, chars_saved) to one row."""
    await conn.execute(QUERIES["add_usage"], tenant_id, day, tool, *counts)
