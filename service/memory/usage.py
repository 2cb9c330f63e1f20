"""Daily usage per tenant and tool: calls, failures, bytes, characters returned and saved.

Requests are counted in process memory and flushed every few seconds (and at
shutdown) with one upsert per (tenant, day, tool), so counting never adds a write
to a request's own path. A crash loses at most one flush interval of counts.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import UTC, date, datetime

from service.db import usage as store
from service.memory.library import Library
from service.models import TenantId

Key = tuple[TenantId, date, str]


@dataclasses.dataclass(slots=True)
class Counts:
    calls: int = 0
    failures: int = 0
    bytes_out: int = 0
    chars_returned: int = 0
    chars_saved: int = 0

    def as_tuple(self) -> tuple[int, int, int, int, int]:
        return (self.calls, self.failures, self.bytes_out, self.chars_returned, self.chars_saved)


class UsageCounter:
    """Counts tool calls until :meth:`flush` writes them."""

    def __init__(self) -> None:
        self._pending: defaultdict[Key, Counts] = defaultdict(Counts)

    def add(
        self,
        tenant_id: TenantId,
        tool: str,
        *,
        failed: bool,
        bytes_out: int,
        chars_returned: int,
        chars_saved: int,
    ) -> None:
        counts = self._pending[(tenant_id, datetime.now(UTC).date(), tool)]
        counts.calls += 1
        counts.failures += int(failed)
        counts.bytes_out += bytes_out
        counts.chars_returned += chars_returned
        counts.chars_saved += chars_saved

    async def flush(self, lib: Library) -> int:
        """Write and forget what was counted; returns the number of rows touched."""
        pending, self._pending = self._pending, defaultdict(Counts)
        for (tenant_id, day, tool), counts in sorted(pending.items(), key=str):
            async with lib.db.tenant_tx(tenant_id) as conn:
                await store.add_usage(conn, tenant_id, day, tool, counts.as_tuple())
        return len(pending)
