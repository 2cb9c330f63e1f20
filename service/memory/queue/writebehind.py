"""The write-behind embedder: rows a write just committed are embedded moments later.

Every serving process runs one (``run_write_behind``). It takes the rows its own writes
offered through ``lib.handoff`` in batches of ``CPERSONA_EMBEDDING_BATCH_SIZE`` and
runs them through the queue worker's claim/embed/settle (``worker.drain_items``), so
the durable job of each row is claimed with the same lease and ``SKIP LOCKED`` as the
queue worker's: a row is never embedded by both, and a row whose job another worker
already took is left to it. Up to ``DRAINS`` batches run at once, so the database
work of one overlaps the model call of the next (the batcher still runs the model
calls one after another, the query lane first).

Nothing here is needed for correctness: while the provider's circuit breaker is open
the rows are left to the queue worker (which retries with backoff), and a process
that dies leaves its rows' jobs for the queue worker after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Coroutine
from typing import Any

from service.logs import get_logger
from service.memory.library import Library
from service.memory.queue import worker
from service.memory.queue.embedding import ItemKey

log = get_logger("service.embeddings")
DRAINS = 2
GATHER_SECONDS = 0.02
"""How long an idle write-behind waits, after a row arrives, for more to fill a batch
(docs/reliability.md, "The fixed cost of a store"): a caller writing in a row stores
a few rows in that time, and they share one model call and one claim and settle
instead of each paying them in the middle of the caller's next write. A full batch
goes at once; a row waits at most this long more before it is embedded."""


async def run_write_behind(
    lib: Library, stop: asyncio.Event, *, gather_s: float = GATHER_SECONDS
) -> None:
    """Embed offered rows until ``stop`` is set; batches in progress finish. After the
    first row arrives, rows are gathered for up to ``gather_s`` or until a batch is
    full."""
    handoff = lib.handoff
    handoff.start()
    running: set[asyncio.Task[None]] = set()
    size = lib.settings.embedding_batch_size
    try:
        while await _until(handoff.wait(), stop) and await _until(
            handoff.gather(size, gather_s), stop
        ):
            if running and len(running) >= DRAINS:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            if lib.breaker.retry_in() > 0:  # the queue worker retries them with backoff
                handoff.take(len(handoff))
                continue
            task = asyncio.create_task(_drain(lib, handoff.take(size)))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        handoff.stop()
        if running:
            await asyncio.wait(set(running))


async def _until(waiting: Coroutine[Any, Any, None], stop: asyncio.Event) -> bool:
    """Wait for ``waiting`` (True) unless ``stop`` is set first (False)."""
    waits = {asyncio.ensure_future(waiting), asyncio.ensure_future(stop.wait())}
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in waits:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
    return not stop.is_set()


async def _drain(lib: Library, batch: list[ItemKey]) -> None:
    try:
        result = await worker.drain_items(lib, batch)
    except Exception:  # the jobs stay queued; the queue worker embeds them
        log.exception("write-behind embedding failed")
        return
    if result.claimed:  # the same line as the queue worker's batches, told apart by source
        log.info("embedding batch", source="write-behind", **dataclasses.asdict(result))
