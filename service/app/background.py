"""Work a serving process runs beside its requests: the embedding worker, the usage
flusher and the export-area sweeper, each an async context manager entered in the
application lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from service.logs import get_logger
from service.memory.library import Library
from service.memory.portability import export_area
from service.memory.queue import worker
from service.memory.usage import UsageCounter

log = get_logger("service.app")
USAGE_FLUSH_SECONDS = 5.0


@contextlib.asynccontextmanager
async def usage_flusher(lib: Library, usage: UsageCounter) -> AsyncIterator[None]:
    """Flush usage counters every few seconds, and once more at shutdown."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(USAGE_FLUSH_SECONDS)
            await _flush(lib, usage)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await _flush(lib, usage)


async def _flush(lib: Library, usage: UsageCounter) -> None:
    try:
        await usage.flush(lib)
    except Exception:  # counting must never take the service down; the loss is logged
        log.exception("usage_flush_failed")


@contextlib.asynccontextmanager
async def embedding_worker(lib: Library, model_recorded: bool) -> AsyncIterator[None]:
    """Drain the embedding queue in the background while serving, when this process
    should (embedded database, or CPERSONA_SERVE_WORKER); the batch in progress
    finishes at shutdown."""
    if not (lib.queue_enabled and lib.settings.runs_worker_in_serve):
        yield
        return
    stop = asyncio.Event()
    work = worker.run_worker(lib, stop, model_recorded=model_recorded)
    task = asyncio.create_task(work, name="embedding-worker")
    try:
        yield
    finally:
        stop.set()
        await task


@contextlib.asynccontextmanager
async def export_area_sweeper(lib: Library) -> AsyncIterator[None]:
    """Delete expired export-area files (CPERSONA_EXPORT_RETENTION_HOURS) every few
    minutes while serving; every replica sweeps, and sweeps are idempotent."""
    stop = asyncio.Event()
    task = asyncio.create_task(export_area.run_sweeper(lib, stop), name="export-area-sweeper")
    try:
        yield
    finally:
        stop.set()
        await task
