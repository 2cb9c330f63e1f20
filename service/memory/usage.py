"""Daily usage per tenant and tool: calls, failures, bytes, characters and tokens.

Requests are counted in process memory and flushed every few seconds (and at
shutdown) with one upsert per (tenant, day, tool), so counting never adds a write
to a request's own path. A crash loses at most one flush interval of counts.

Besides calls, failures and bytes, each row counts the content characters returned
and held back by previews (``chars_*``), the estimated tokens of the answers
(``tokens_delivered``) and the tokens that previews, excerpts, ``max_tokens`` budgets
and the session ledger held back (``tokens_saved_*``; see :data:`SAVING_CAUSES`).
:func:`report` reads them back for ``cpersona-service usage``.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Final

from service.db import usage as usage_queries
from service.db.usage import UsageRow
from service.memory.library import Library
from service.models import TenantId

Key = tuple[TenantId, date, str]
SAVING_CAUSES: Final = ("previews", "excerpts", "budgets", "ledger")
UNKNOWN_TOOL: Final = "unknown"
"""The one row name of every call naming no tool of the catalogue (as the metrics label):
a client choosing names must not add rows without bound, nor put its text in the table."""

__all__ = ["SAVING_CAUSES", "UNKNOWN_TOOL", "Counts", "UsageCounter", "UsageRow", "report"]


@dataclasses.dataclass(slots=True)
class Counts:
    calls: int = 0
    failures: int = 0
    bytes_out: int = 0
    chars_returned: int = 0
    chars_saved: int = 0
    tokens_delivered: int = 0
    tokens_saved: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(SAVING_CAUSES, 0)
    )

    def as_tuple(self) -> tuple[int, ...]:
        """In the column order of ``usage_daily`` (``db.usage.add_usage``)."""
        saved = tuple(self.tokens_saved[cause] for cause in SAVING_CAUSES)
        return (
            self.calls,
            self.failures,
            self.bytes_out,
            self.chars_returned,
            self.chars_saved,
            self.tokens_delivered,
            *saved,
        )


class UsageCounter:
    """Counts tool calls until :meth:`flush` writes them; a name not in ``tools`` (the
    catalogue) is counted as :data:`UNKNOWN_TOOL`."""

    def __init__(self, tools: Iterable[str]) -> None:
        self._tools = frozenset(tools)
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
        tokens_delivered: int = 0,
        tokens_saved: Mapping[str, int] | None = None,
    ) -> None:
        name = tool if tool in self._tools else UNKNOWN_TOOL
        counts = self._pending[(tenant_id, datetime.now(UTC).date(), name)]
        counts.calls += 1
        counts.failures += int(failed)
        counts.bytes_out += bytes_out
        counts.chars_returned += chars_returned
        counts.chars_saved += chars_saved
        counts.tokens_delivered += tokens_delivered
        for cause, tokens in (tokens_saved or {}).items():
            if cause in counts.tokens_saved:
                counts.tokens_saved[cause] += tokens

    async def flush(self, lib: Library) -> int:
        """Write and forget what was counted; returns the number of rows touched."""
        pending, self._pending = self._pending, defaultdict(Counts)
        for (tenant_id, day, tool), counts in sorted(pending.items(), key=str):
            async with lib.db.tenant_tx(tenant_id) as conn:
                await usage_queries.add_usage(conn, tenant_id, day, tool, counts.as_tuple())
        return len(pending)


async def report(lib: Library, tenant_id: TenantId, days: int) -> list[UsageRow]:
    """The tenant's usage of the last ``days`` UTC days (today included), newest day
    first, one row per day and tool."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        return await usage_queries.usage_report(conn, tenant_id, days)
