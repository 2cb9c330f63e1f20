"""Work a serving process runs beside its requests: the embedding worker, the
write-behind embedder, the usage flusher, the export-area sweeper, the sweeper of unused
OAuth clients and the embedded Postgres supervisor, each an async context manager
entered in the application lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from service.app.oauth import server as oauth_server
from service.db.embedded import EmbeddedPostgres, RestartFailed
from service.db.pool import Database
from service.logs import get_logger, throttled
from service.memory.library import Library
from service.memory.portability import export_area
from service.memory.queue import worker
from service.memory.queue.writebehind import run_write_behind
from service.memory.usage import UsageCounter

log = get_logger("service.app")
USAGE_FLUSH_SECONDS = 5.0
SUPERVISE_SECONDS = 0.5
"""How often the supervisor checks that the embedded postmaster is alive."""
RESTART_BACKOFF_MAX = 5.0
OAUTH_SWEEP_SECONDS = 600.0
"""How often unused OAuth clients are looked for (their expiry is in hours)."""


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
        await _cancelled(task)
        await _flush(lib, usage)


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _flush(lib: Library, usage: UsageCounter) -> None:
    try:
        await usage.flush(lib)
    except Exception:  # counting must never take the service down; the loss is logged
        log.exception("usage_flush_failed")  # an outage: one line per interval, no traceback


@contextlib.asynccontextmanager
async def postgres_supervisor(
    embedded: EmbeddedPostgres | None, db: Database
) -> AsyncIterator[None]:
    """Restart the embedded Postgres whenever its postmaster dies, for as long as the
    service runs, and have the pool reconnect at once (nothing to do with an external
    database: the pool reconnects with backoff on its own)."""
    if embedded is None:
        yield
        return
    task = asyncio.create_task(_supervise(embedded, db), name="postgres-supervisor")
    try:
        yield
    finally:
        await _cancelled(task)


async def _supervise(embedded: EmbeddedPostgres, db: Database) -> None:
    while True:
        await asyncio.sleep(SUPERVISE_SECONDS)
        if not embedded.running():
            await _restart(embedded)
            db.availability.retry_now()


async def _restart(embedded: EmbeddedPostgres) -> None:
    """Start Postgres again (it recovers from its write-ahead log), retrying with backoff."""
    died = time.monotonic()
    log.warning("embedded_postgres_died", pgdata=str(embedded.pgdata))
    delay = SUPERVISE_SECONDS
    while True:
        try:
            killed = await asyncio.to_thread(embedded.restart)
        except RestartFailed as exc:
            if (suppressed := throttled("embedded_postgres_restart_failed")) is not None:
                log.warning(
                    "embedded_postgres_restart_failed", error=str(exc)[:300], suppressed=suppressed
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_BACKOFF_MAX)
            continue
        seconds = round(time.monotonic() - died, 2)
        log.info("embedded_postgres_restarted", seconds=seconds, killed_orphans=killed)
        return


@contextlib.asynccontextmanager
async def embedding_worker(lib: Library, model_recorded: bool) -> AsyncIterator[None]:
    """Drain the embedding queue in the background while serving, when this process
    should (embedded database, or CPERSONA_SERVE_WORKER); the batch in progress
    finishes at shutdown."""
    if not (lib.queue_enabled and lib.settings.runs_worker_in_serve):
        yield
        return
    work = functools.partial(worker.run_worker, lib, model_recorded=model_recorded)
    async with _until_stopped(work, "embedding-worker"):
        yield


@contextlib.asynccontextmanager
async def _until_stopped(
    run: Callable[[asyncio.Event], Coroutine[Any, Any, None]], name: str
) -> AsyncIterator[None]:
    """Run ``run(stop)`` as a task named ``name`` for the body's duration, then set
    ``stop`` and wait for it: a loop that owns a batch finishes it instead of being
    cancelled in the middle (the worker, the write-behind, the sweeper)."""
    stop = asyncio.Event()
    task = asyncio.create_task(run(stop), name=name)
    try:
        yield
    finally:
        stop.set()
        await task


@contextlib.asynccontextmanager
async def write_behind(lib: Library) -> AsyncIterator[None]:
    """Embed the rows this process's writes commit without a vector, moments later
    (every serving process runs one; the queue worker covers what it leaves)."""
    if not lib.queue_enabled:
        yield
        return
    async with _until_stopped(functools.partial(run_write_behind, lib), "write-behind"):
        yield


@contextlib.asynccontextmanager
async def export_area_sweeper(lib: Library) -> AsyncIterator[None]:
    """Delete expired export-area files (CPERSONA_EXPORT_RETENTION_HOURS) every few
    minutes while serving; every replica sweeps, and sweeps are idempotent."""
    async with _until_stopped(
        functools.partial(export_area.run_sweeper, lib), "export-area-sweeper"
    ):
        yield


@contextlib.asynccontextmanager
async def oauth_client_sweeper(lib: Library) -> AsyncIterator[None]:
    """Delete OAuth clients never issued a token CPERSONA_OAUTH_UNUSED_CLIENT_HOURS after
    they registered: at start, then every ``OAUTH_SWEEP_SECONDS`` while serving. Every
    replica sweeps; sweeps are idempotent, and a failed one (database down) waits for
    the next round."""
    task = asyncio.create_task(_sweep_oauth_clients(lib), name="oauth-client-sweeper")
    try:
        yield
    finally:
        await _cancelled(task)


async def _sweep_oauth_clients(lib: Library) -> None:
    hours = lib.settings.oauth_unused_client_hours
    while True:
        try:
            deleted = await oauth_server.expire_unused_clients(lib.db, hours)
        except Exception:  # an outage: one line per interval, and the next round retries
            if (suppressed := throttled("oauth_client_sweep_failed")) is not None:
                log.warning("oauth_client_sweep_failed", suppressed=suppressed)
        else:
            if deleted:
                log.info("oauth_unused_clients_deleted", clients=deleted, older_than_hours=hours)
        await asyncio.sleep(OAUTH_SWEEP_SECONDS)
