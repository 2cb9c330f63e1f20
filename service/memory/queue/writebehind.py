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

from service.logs import get_logger
from service.memory.library import Library
from service.memory.queue import worker
from service.memory.queue.embedding import ItemKey

log = get_logger("service.embeddings")
DRAINS = 2


async def run_write_behind(lib: Library, stop: asyncio.Event) -> None:
    """Embed offered rows until ``stop`` is set; batches in progress finish."""
    handoff = lib.handoff
    handoff.start()
    running: set[asyncio.Task[None]] = set()
    try:
        while await _row_waiting(lib, stop):
            if running and len(running) >= DRAINS:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            if lib.breaker.retry_in() > 0:  # the queue worker retries them with backoff
                handoff.take(len(handoff))
                continue
            task = asyncio.create_task(_drain(lib, handoff.take(lib.settings.embedding_batch_size)))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        handoff.stop()
        if running:
            await asyncio.wait(set(running))


async def _row_waiting(lib: Library, stop: asyncio.Event) -> bool:
    """Wait until a row is offered (True) or ``stop`` is set (False)."""
    waits = {asyncio.ensure_future(lib.handoff.wait()), asyncio.ensure_future(stop.wait())}
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
    return not stop.is_set()


async def _drain(lib: Library, batch: list[ItemKey]) -> None:
    try:
        result = await worker.drain_items(lib, batch)
    except Exception:  # the jobs stay queued; the queue worker embeds them
        log.exception("write-behind embedding failed")
        return
    if result.claimed:  # the same line as the queue worker's batches, told apart by source
        log.info("embedding batch", source="write-behind", **dataclasses.asdict(result))
