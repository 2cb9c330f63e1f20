"""What every command shares: the database URL (starting the embedded server when
needed), short-lived pools and libraries, and the one-line error."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeAlias, TypeVar

from service.config import Settings
from service.db import migrate
from service.db.embedded import EmbeddedPostgres, StartFailed
from service.db.pool import Database, Planning
from service.logs import get_logger
from service.memory.library import Library, build_library

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What a command module's ``add_parsers`` adds its subcommands to."""

T = TypeVar("T")


log = get_logger("service.cli")


class CliError(Exception):
    """A failure to report in one line and exit 1."""


_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SHOWN = str.maketrans(
    {
        code: ascii(chr(code))[1:-1]
        for code in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *_BIDI_CONTROLS)
    }
)


def shown(value: object) -> str:
    r"""``value`` as text safe for the operator's terminal: control characters (C0, DEL,
    C1), line and paragraph separators and bidi controls written as Python escapes
    (``\x1b``, ``\r``, ``\u202e``), so stored text (a tool name, a label, an agent)
    can neither drive the terminal nor forge or hide report lines (docs/reliability.md)."""
    return str(value).translate(_SHOWN)


_JSON_SHOWN = str.maketrans({code: f"\\u{code:04x}" for code in _SHOWN})


def json_shown(value: object) -> str:
    """``value`` as one line of JSON (non-ASCII text kept) with the characters
    :func:`shown` escapes written as JSON ``\\uXXXX`` escapes: still valid JSON."""
    return json.dumps(value, ensure_ascii=False).translate(_JSON_SHOWN)


@contextlib.contextmanager
def embedded_server(
    settings: Settings, *, keep_running: bool = False
) -> Iterator[EmbeddedPostgres | None]:
    """The embedded server when DATABASE_URL is unset (started, migrated), else None."""
    if not settings.uses_embedded_postgres:
        yield None
        return
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a bad setting: one line naming it, not a traceback
        reason = exc.strerror or str(exc)
        raise CliError(f"CPERSONA_DATA_DIR: cannot use {settings.data_dir}: {reason}") from None
    embedded = EmbeddedPostgres(settings.data_dir, shared_buffers=settings.embedded_shared_buffers)
    try:
        url = embedded.start(keep_running=keep_running)
    except StartFailed as exc:  # one line naming what to look at, not the wheel's traceback
        raise CliError(
            f"embedded Postgres did not start: {exc} (its log: {embedded.pgdata / 'log'};"
            f" shared_buffers {embedded.shared_buffers}, CPERSONA_EMBEDDED_SHARED_BUFFERS)"
        ) from None
    migrate.upgrade(url)
    try:
        yield embedded
    finally:
        if not keep_running:
            embedded.stop()


@contextlib.contextmanager
def database_url(
    settings: Settings, *, keep_running: bool = False, direct: bool = False
) -> Iterator[str]:
    """The configured database URL, starting the embedded server when needed.

    The embedded database is migrated on every start (it belongs to this
    service); an external one is migrated only by ``cpersona-service migrate``.
    ``direct`` asks for CPERSONA_MIGRATION_DATABASE_URL when it is set: migrations,
    ``db url`` and start-up checks go straight to Postgres, past a transaction-mode
    pooler (which cannot hold a migration's session or a psql session's settings).
    """
    with embedded_server(settings, keep_running=keep_running) as embedded:
        if embedded is not None:
            yield embedded.url()
        else:
            yield str(settings.direct_database_url if direct else settings.database_url)


def short_lived(settings: Settings, url: str, *, max_size: int) -> Database:
    """A small pool for a command, told about the pooler unless ``url`` is the direct
    migration URL (CPERSONA_DB_POOLER concerns DATABASE_URL only)."""
    pooler = "none" if url == settings.migration_database_url else settings.db_pooler
    return Database(
        url,
        min_size=1,
        max_size=max_size,
        pooler=pooler,
        planning=Planning.of(settings),
    )


def run_db(settings: Settings, url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run ``work`` against a short-lived pool (admin commands)."""

    async def main() -> T:
        db = await short_lived(settings, url, max_size=2).open()
        try:
            return await work(db)
        finally:
            await db.close()

    return asyncio.run(main())


async def check_head(db: Database) -> None:
    """Refuse a database behind this code (one ahead of it is fine: migrations are additive)."""
    revision = await migrate.current_revision(db)
    if not migrate.servable(revision):
        raise CliError(f"database is at {revision}, not head: run `cpersona-service migrate`")
    if migrate.revision_state(revision) == "ahead":
        log.info("database is ahead of this code", revision=revision, head=migrate.head_revision())


@contextlib.asynccontextmanager
async def open_library(settings: Settings, url: str) -> AsyncIterator[Library]:
    """A migrated database's library with the configured embedder (background commands)."""
    db = await short_lived(settings, url, max_size=4).open()
    lib: Library | None = None
    try:
        await check_head(db)
        lib = build_library(db, settings)
        yield lib
    finally:
        if lib is not None:
            await lib.aclose()
        await db.close()
