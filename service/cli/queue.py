"""worker and reembed: draining the embedding queue from the command line."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

from service.cli.runtime import CliError, Commands, database_url, log, open_library
from service.config import Settings
from service.db.queue import Backlog
from service.memory.library import Library
from service.memory.queue import backlog, worker


async def _worker(settings: Settings, url: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with open_library(settings, url) as lib:
        recorded = await worker.start_up(lib)
        log.info("worker started", embedding_mode=settings.embedding_mode)
        await worker.run_worker(lib, stop, model_recorded=recorded)
    log.info("worker stopped")


def cmd_worker(settings: Settings, args: argparse.Namespace) -> None:
    """Drain the embedding queue until SIGTERM/SIGINT (the current batch finishes)."""
    with database_url(settings) as url:
        asyncio.run(_worker(settings, url))


class _Progress:
    """Re-embed progress: one rewritten line on a terminal, a plain line every few
    seconds (and the last one) when piped."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stdout.isatty()
        self.printed_at = 0.0

    def update(self, backlog: Backlog) -> None:
        done = max(self.total - backlog.pending, 0)
        line = f"re-embedding: {done}/{self.total} done, {backlog.retrying} retrying"
        if self.tty:
            print(f"\r{line}", end="" if backlog.pending else "\n", flush=True)
        elif backlog.pending == 0 or time.monotonic() - self.printed_at >= 5:
            print(line, flush=True)
            self.printed_at = time.monotonic()


async def _reembed(settings: Settings, url: str, args: argparse.Namespace) -> None:
    async with open_library(settings, url) as lib:
        if lib.embedder is None:
            raise CliError("embeddings are off (CPERSONA_EMBEDDING_MODE=none): nothing to embed")
        tenant = None if args.tenant is None else await backlog.tenant_by_slug(lib, args.tenant)
        await worker.start_up(lib)
        queued = await backlog.enqueue_reembed(lib, tenant, every_row=args.all, reset=True)
        queued += await backlog.enqueue_passages(lib, tenant)
        print(f"queued {queued} rows for embedding with {lib.embedder.name}", flush=True)
        if args.no_wait:
            return
        progress = _Progress((await backlog.backlog(lib, tenant)).pending)
        await worker.drain_until_empty(lib, tenant, progress.update)
        await _vacuum(lib)


async def _vacuum(lib: Library) -> None:
    """``backlog.vacuum_rewritten``; a failure only logs (the rows are embedded, and
    autovacuum clears the old versions later)."""
    started = time.monotonic()
    try:
        await backlog.vacuum_rewritten(lib)
    except Exception as exc:  # the re-embed itself is done; only its clean-up failed
        log.warning(
            "vacuum after reembed failed; autovacuum will clear the old row versions",
            error=str(exc) or type(exc).__name__,
        )
        return
    log.info("vacuumed the re-embedded tables", seconds=round(time.monotonic() - started, 1))


def cmd_reembed(settings: Settings, args: argparse.Namespace) -> None:
    """Queue rows for (re-)embedding and, unless --no-wait, drain until none is left (a
    provider that is down is waited for: interrupt to stop waiting, the rows stay queued),
    then vacuum the rewritten tables (``backlog.vacuum_rewritten``)."""
    with database_url(settings) as url:
        asyncio.run(_reembed(settings, url, args))


def add_parsers(commands: Commands) -> None:
    worker = commands.add_parser("worker", help="drain the embedding queue (no HTTP)")
    worker.set_defaults(run=cmd_worker)
    reembed = commands.add_parser(
        "reembed", help="queue rows without a current-model embedding and wait for them"
    )
    reembed.add_argument("--tenant", metavar="SLUG", help="only this tenant (default: all)")
    reembed.add_argument(
        "--all", action="store_true", help="every row, even those already embedded by this model"
    )
    reembed.add_argument("--no-wait", action="store_true", help="queue and return at once")
    reembed.set_defaults(run=cmd_reembed)
