"""The hand-off from a committed write to this process's write-behind embedder.

A write that does not wait for its vector commits the row together with its durable
job (``embedding_jobs``) and then *offers* the row here; the write-behind task
(``queue/writebehind.py``, started by the serving process) takes offered rows in
batches and embeds them moments later. The hand-off is only an optimisation of
latency: a row that is never taken (the process dies, the hand-off is full, nobody
runs the write-behind, as in the CLI) keeps its job and the queue worker embeds it.

Until a write-behind opens it the hand-off accepts nothing, so commands that never
serve hold no growing set. One event loop; not thread-safe.
"""

from __future__ import annotations

import asyncio

from service.db.queue import ItemKind
from service.models import TenantId

ItemKey = tuple[TenantId, ItemKind, int]
DEFAULT_LIMIT = 10_000
"""Rows held at most; beyond it a row is left to the queue worker."""


class Handoff:
    """An ordered set of rows to embed soon, bounded by ``limit``."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._keys: dict[ItemKey, None] = {}
        self._ready: asyncio.Event | None = None

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def open(self) -> bool:
        """Whether a write-behind takes offered rows."""
        return self._ready is not None

    def offer(self, tenant_id: TenantId, kind: ItemKind, item_id: int) -> bool:
        """Hand a committed row over; False when it is left to the queue worker."""
        if self._ready is None or len(self._keys) >= self._limit:
            return False
        self._keys[(tenant_id, kind, item_id)] = None
        self._ready.set()
        return True

    def start(self) -> None:
        """Start accepting rows (the write-behind is running on this loop)."""
        self._ready = asyncio.Event()

    def stop(self) -> list[ItemKey]:
        """Stop accepting rows; returns those not taken (their jobs stay queued)."""
        left, self._keys, self._ready = list(self._keys), {}, None
        return left

    async def wait(self) -> None:
        """Return once a row is waiting (at once when one is)."""
        if self._ready is None:
            raise RuntimeError("the hand-off is not open")
        if not self._keys:
            self._ready.clear()
            await self._ready.wait()

    def take(self, limit: int) -> list[ItemKey]:
        """Up to ``limit`` rows, the oldest first."""
        taken: list[ItemKey] = []
        for key in self._keys:
            if len(taken) == limit:
                break
            taken.append(key)
        for key in taken:
            del self._keys[key]
        return taken
