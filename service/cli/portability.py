"""export and import: the JSONL format streamed to and from files, with progress."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import BinaryIO, TextIO

from service.cli import portability
from service.cli.runtime import Commands, database_url, json_shown, run_db
from service.config import Settings
from service.db.pool import Database
from service.errors import InvalidInput
from service.mcp.render import portability as render_portability
from service.memory.library import Library
from service.memory.portability import export, files, import_
from service.memory.portability.outcomes import Imported
from service.memory.queue import backlog


def cmd_export(settings: Settings, args: argparse.Namespace) -> None:
    """Stream a tenant's memory as JSONL to --output (atomically) or stdout."""
    with database_url(settings) as url:
        summary = run_db(settings, url, lambda db: portability.run_export(db, settings, args))
    print(summary, file=sys.stderr if args.output is None else sys.stdout)


def cmd_import(settings: Settings, args: argparse.Namespace) -> None:
    """Stream a JSONL file (or stdin) into a tenant; prints the result as one JSON line."""
    with database_url(settings) as url:
        result = run_db(settings, url, lambda db: portability.run_import(db, settings, args))
    print(portability.import_outcome(result))


class Progress:
    """A progress line redrawn at most ten times a second on a terminal; silent otherwise."""

    def __init__(self, label: str, stream: TextIO, unit: str = "rows") -> None:
        self.label, self.stream, self.unit = label, stream, unit
        self.enabled = stream.isatty()
        self.started = time.monotonic()
        self.drawn_at = 0.0

    def update(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if not self.enabled or (now - self.drawn_at < 0.1 and done != total):
            return
        self.drawn_at = now
        rate = done / max(now - self.started, 1e-6)
        amount = self._amount(done, total)
        width = 30
        bar = ""
        if total:
            filled = int(width * done / total)
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // total:3d}% "
        self.stream.write(f"\r{self.label}: {bar}{amount}, {self._format(rate)}/s ")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.drawn_at:
            self.stream.write("\n")
            self.stream.flush()

    def _amount(self, done: int, total: int | None) -> str:
        if total is None:
            return f"{self._format(done)} read"
        return f"{self._format(done)}/{self._format(total)}"

    def _format(self, value: float) -> str:
        if self.unit == "bytes":
            return f"{value / 1e6:.1f} MB"
        return f"{int(value):,} {self.unit}"


async def run_export(db: Database, settings: Settings, args: argparse.Namespace) -> str:
    """Export tenant ``--tenant`` (agent ``--agent``, or all) to ``--output`` or stdout."""
    lib = Library(db, settings)
    tenant = await backlog.tenant_by_slug(lib, args.tenant)
    request = export.ExportRequest(args.agent or "", args.include_embeddings)
    progress = Progress("export", sys.stderr)
    if args.output:
        target = Path(args.output)
        async with files.atomic_file(target) as write:
            counts = await export.export_jsonl(lib, tenant, request, write, progress.update)
    else:
        out = sys.stdout.buffer

        async def write(data: bytes) -> None:
            out.write(data)

        try:
            counts = await export.export_jsonl(lib, tenant, request, write, progress.update)
            out.flush()
        except BrokenPipeError:
            raise InvalidInput("export: the output was closed early (broken pipe)") from None
    progress.finish()
    where = args.output or "stdout"
    return (
        f"exported {counts.memories} memories, {counts.episodes} episodes and "
        f"{counts.profiles} profiles to {where}"
    )


def _open_input(name: str) -> tuple[BinaryIO, int | None]:
    """The input and its size (None for a pipe or stdin)."""
    if name == "-":
        return sys.stdin.buffer, None
    try:
        handle = os.fdopen(os.open(name, os.O_RDONLY), "rb")  # closed by read_chunks
    except OSError as exc:
        raise InvalidInput(f"cannot read {name}: {exc.strerror or exc}") from None
    info = os.fstat(handle.fileno())
    return handle, info.st_size if info.st_size else None


async def _counted(
    chunks: AsyncIterator[bytes], progress: Progress, total: int | None
) -> AsyncGenerator[bytes, None]:
    done = 0
    async for chunk in chunks:
        done += len(chunk)
        progress.update(done, total)
        yield chunk


async def run_import(db: Database, settings: Settings, args: argparse.Namespace) -> Imported:
    """Import FILE (``-`` = stdin) into tenant ``--tenant``; what the import did."""
    lib = Library(db, settings)
    tenant = await backlog.tenant_by_slug(lib, args.tenant)
    handle, size = await asyncio.to_thread(_open_input, args.file)
    progress = Progress("import", sys.stderr, unit="bytes")
    request = import_.ImportRequest(args.target_agent or "", args.dry_run)
    reader = _counted(files.read_chunks(handle, None, args.file), progress, size)
    try:
        async with contextlib.aclosing(reader) as chunks:
            result = await import_.import_jsonl(lib, tenant, chunks, request)
    except OSError as exc:
        raise InvalidInput(f"cannot read {args.file}: {exc.strerror or exc}") from None
    progress.finish()
    return result


def import_outcome(result: Imported) -> str:
    """The result as one JSON line for stdout, in the import tool's shape (an aborted
    import raised Refused before: one line on stderr, exit 1)."""
    return json_shown(render_portability.imported(result))


def add_parsers(commands: Commands) -> None:
    exporter = commands.add_parser(
        "export", help="write a tenant's memory as cpersona-export/1.0 JSONL"
    )
    exporter.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    exporter.add_argument("--agent", metavar="AGENT", help="only this agent (default: all)")
    exporter.add_argument("--output", metavar="FILE", help="write here (default: stdout)")
    exporter.add_argument(
        "--include-embeddings", action="store_true", help="also write each row's embedding"
    )
    exporter.set_defaults(run=cmd_export)
    importer = commands.add_parser("import", help="read cpersona-export JSONL into a tenant")
    importer.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    importer.add_argument("file", metavar="FILE", help="the JSONL file ('-' = stdin)")
    importer.add_argument("--target-agent", metavar="AGENT", help="import everything into AGENT")
    importer.add_argument("--dry-run", action="store_true", help="report, write nothing")
    importer.set_defaults(run=cmd_import)
