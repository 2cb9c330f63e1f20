"""Files on disk: each tenant's export-area directory, and bounded streaming helpers.

A tenant's area is ``<CPERSONA_EXPORT_DIR or <data_dir>/exports>/<tenant uuid>/``. Files
in it are stored under random names (``f<32 hex>.jsonl``), one per version of a file,
and reached only through the catalogue (``export_area``), never by the names callers
use: a caller's name is a key, not a path, so no name, ``..`` segment or symlink can
reach outside the area or another version. Names are still checked (CPersona's
path-traversal refusal) so they stay portable file names. A new version is written
and fsynced before the catalogue points at it; reads require a regular file and are
bounded by ``CPERSONA_MAX_IMPORT_BYTES`` even if the file grows while read.
``atomic_file`` writes a local file for the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import stat
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Sequence,
)
from pathlib import Path
from typing import BinaryIO

from service.config import Settings
from service.errors import InvalidInput, NotFound, Refused
from service.memory import text
from service.models import TenantId

CHUNK_BYTES = 1 << 20
MAX_NAME_CHARS = 1024
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class InputTooLarge(Refused):
    """The import input is larger than CPERSONA_MAX_IMPORT_BYTES."""

    def __init__(self, limit: int, name: str = "") -> None:
        where = f": {name}" if name else ""
        super().__init__(f"input file exceeds MAX_IMPORT_BYTES ({limit}){where}")
        self.limit = limit


class PathRejected(InvalidInput):
    """A name that is not a relative file name."""


def export_root(settings: Settings) -> Path:
    return settings.export_dir or settings.data_dir / "exports"


def tenant_area(settings: Settings, tenant_id: TenantId) -> Path:
    """The tenant's directory (created, owner-only), by tenant UUID."""
    area = export_root(settings) / str(tenant_id)
    area.mkdir(mode=0o700, parents=True, exist_ok=True)
    return area


def name_is_valid(name: str) -> bool:
    """Whether ``name`` is a relative file name: not empty, not too long, no NUL, text
    (no lone surrogate: neither the file system nor the database can hold one), not
    absolute, not a directory (trailing ``/``, ``.``), no ``..`` segment."""
    if not name or len(name) > MAX_NAME_CHARS or "\x00" in name or name.endswith("/"):
        return False
    if text.text_problem(name) is not None:
        return False
    if os.path.isabs(name) or ".." in name.replace(os.sep, "/").split("/"):
        return False
    return os.path.normpath(name) != "."


def check_name(name: str, what: str) -> None:
    if not name_is_valid(name):
        raise PathRejected(f"{what} rejected (path traversal or outside export dir): {name}")


Write = Callable[[bytes], Awaitable[None]]


class StoredFile:
    """A new file in an area under a fresh random name, written through :meth:`write`."""

    def __init__(self, area: Path) -> None:
        self.storage = f"f{secrets.token_hex(16)}.jsonl"
        self.path = area / self.storage
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW
        self._handle: BinaryIO = os.fdopen(os.open(self.path, flags, 0o600), "wb")
        self.size = 0

    async def write(self, data: bytes) -> None:
        await asyncio.to_thread(self._handle.write, data)
        self.size += len(data)

    async def finish(self) -> None:
        """Flush and fsync: the bytes are on disk before anything points at them."""

        def done() -> None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

        await asyncio.to_thread(done)

    def discard(self) -> None:
        self._handle.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


@contextlib.asynccontextmanager
async def new_stored_file(area: Path) -> AsyncIterator[StoredFile]:
    """A new stored file; removed again when the block raises (before or after finish)."""
    stored = await asyncio.to_thread(StoredFile, area)
    try:
        yield stored
    except BaseException:
        await asyncio.to_thread(stored.discard)
        raise


def _open_regular(path: Path, name: str, limit: int | None) -> tuple[BinaryIO, int]:
    """Open without following a symlink; refuse non-regular and oversized files."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
    except OSError:
        raise NotFound(f"File not found: {name}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotFound(f"File not found: {name}")
    if limit is not None and info.st_size > limit:
        os.close(fd)
        raise InputTooLarge(limit, name)
    return os.fdopen(fd, "rb"), info.st_size


async def open_stored(
    area: Path, storage: str, name: str, limit: int | None
) -> tuple[BinaryIO, int]:
    """The stored file opened for reading and its size; NotFound when it is gone,
    InputTooLarge above ``limit`` (None: no limit)."""
    return await asyncio.to_thread(_open_regular, area / storage, name, limit)


def _unlink(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


async def remove_stored(area: Path, storages: Sequence[str]) -> None:
    """Remove stored files (already gone is fine)."""
    if storages:
        await asyncio.to_thread(_unlink, [area / name for name in storages])


def _strays(area: Path, known: set[str], cutoff: float) -> int:
    """Remove files (and then empty folders) below ``area`` that no catalogue row names
    and that were last modified before ``cutoff``; how many files went."""
    removed = 0
    for folder, dirs, names in os.walk(area, topdown=False):
        for name in names:
            path = Path(folder) / name
            relative = str(path.relative_to(area))
            with contextlib.suppress(FileNotFoundError):
                if relative not in known and path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        for name in dirs:
            with contextlib.suppress(OSError):
                (Path(folder) / name).rmdir()  # only when empty
    return removed


async def remove_strays(area: Path, known: set[str], grace_seconds: float) -> int:
    """Remove what no row names (a writer that died, files of earlier versions), once it
    is ``grace_seconds`` old: a file being written now is younger than that."""
    return await asyncio.to_thread(_strays, area, known, time.time() - grace_seconds)


async def read_chunks(
    handle: BinaryIO, limit: int | None, name: str = ""
) -> AsyncGenerator[bytes, None]:
    """The file's bytes in 1 MiB chunks (closed at the end); InputTooLarge past ``limit``."""
    total = 0
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
            total += len(chunk)
            if limit is not None and total > limit:
                raise InputTooLarge(limit, name)
            yield chunk
    finally:
        handle.close()


async def bounded(chunks: AsyncIterable[bytes], limit: int) -> AsyncGenerator[bytes, None]:
    """Pass ``chunks`` through, raising InputTooLarge once more than ``limit`` bytes came."""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise InputTooLarge(limit)
        yield chunk


def _create_temporary(target: Path) -> tuple[Path, BinaryIO]:
    if target.is_dir():
        raise InvalidInput(f"{target.name} is a directory")
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp.{os.getpid()}.{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW
    return temporary, os.fdopen(os.open(temporary, flags, 0o600), "wb")


def _commit(handle: BinaryIO, temporary: Path, target: Path) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    os.replace(temporary, target)


def _discard(handle: BinaryIO, temporary: Path) -> None:
    handle.close()
    with contextlib.suppress(OSError):
        temporary.unlink()


@contextlib.asynccontextmanager
async def atomic_file(target: Path) -> AsyncIterator[Write]:
    """A writer whose bytes appear at ``target`` only when the block ends without error.

    Written to a temporary sibling and renamed into place (replacing the old
    file atomically); on error the temporary file is removed and the previous
    file, if any, is untouched. (The command line's local files.)
    """
    temporary, handle = await asyncio.to_thread(_create_temporary, target)

    async def write(data: bytes) -> None:
        await asyncio.to_thread(handle.write, data)

    try:
        yield write
    except BaseException:
        await asyncio.to_thread(_discard, handle, temporary)
        raise
    await asyncio.to_thread(_commit, handle, temporary, target)
