"""Each tenant's export area on the server: confined paths, atomic writes, bounded reads.

CPersona's export/import tools take server paths. A hosted service cannot hand
its filesystem to remote callers, so every tenant gets one directory,
``<CPERSONA_EXPORT_DIR or <data_dir>/exports>/<tenant uuid>/``, and tool paths
are names relative to it. A name with a ``..`` segment, an absolute path, NUL,
or one that resolves (through symlinks) outside the area is rejected; the tenant
id comes from the API key, so one tenant can never name another's files. Files
are written to a temporary name and renamed into place, so a reader never sees a
half-written export; reads require a regular file (no FIFOs or devices) and are
bounded by ``CPERSONA_MAX_IMPORT_BYTES`` even if the file grows while read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import stat
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

from service.config import Settings
from service.errors import InvalidInput, NotFound, Refused
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
    """A name that is not a file inside the caller's area."""


def export_root(settings: Settings) -> Path:
    return settings.export_dir or settings.data_dir / "exports"


def tenant_area(settings: Settings, tenant_id: TenantId) -> Path:
    """The tenant's directory (created, owner-only), by tenant UUID."""
    area = export_root(settings) / str(tenant_id)
    area.mkdir(mode=0o700, parents=True, exist_ok=True)
    return area


def _inside(area: Path, candidate: Path) -> bool:
    root = os.path.realpath(area)
    real = os.path.realpath(candidate)
    return real.startswith(root + os.sep)


def confine(area: Path, name: str) -> Path | None:
    """``area / name`` when ``name`` is a relative path that stays inside the area.

    Rejected (None): empty, too long, NUL, absolute, a directory name (trailing
    ``/``), any ``..`` segment, the area itself, or a path whose real location
    (symlinks resolved) is outside.
    """
    if not name or len(name) > MAX_NAME_CHARS or "\x00" in name or name.endswith("/"):
        return None
    if os.path.isabs(name) or ".." in name.replace(os.sep, "/").split("/"):
        return None
    candidate = area / name
    if not _inside(area, candidate):
        return None
    return candidate


def confine_or_raise(area: Path, name: str, what: str) -> Path:
    path = confine(area, name)
    if path is None:
        raise PathRejected(f"{what} rejected (path traversal or outside export dir): {name}")
    return path


def _open_regular(path: Path, name: str, limit: int) -> tuple[BinaryIO, int]:
    """Open without following a final symlink; refuse non-regular and oversized files."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
    except FileNotFoundError:
        raise NotFound(f"File not found: {name}") from None
    except OSError as exc:
        raise InvalidInput(f"could not read {name}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InvalidInput(f"input_path is not a regular file: {name}")
    if info.st_size > limit:
        os.close(fd)
        raise InputTooLarge(limit, name)
    return os.fdopen(fd, "rb"), info.st_size


async def open_for_import(
    settings: Settings, tenant_id: TenantId, name: str
) -> tuple[BinaryIO, int]:
    """The tenant's file ``name`` opened for reading, and its size."""
    path = confine_or_raise(tenant_area(settings, tenant_id), name, "input_path")
    return await asyncio.to_thread(_open_regular, path, name, settings.max_import_bytes)


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


Write = Callable[[bytes], Awaitable[None]]


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
    file, if any, is untouched.
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


async def save_upload(
    settings: Settings, tenant_id: TenantId, name: str, chunks: AsyncIterable[bytes]
) -> int:
    """Store an uploaded file as ``name`` in the tenant's area; the byte count.

    Bounded by CPERSONA_MAX_IMPORT_BYTES while streaming (InputTooLarge leaves
    nothing behind), written atomically.
    """
    target = confine_or_raise(tenant_area(settings, tenant_id), name, "file name")
    total = 0
    async with atomic_file(target) as write:
        async for chunk in bounded(chunks, settings.max_import_bytes):
            total += len(chunk)
            await write(chunk)
    return total


def _open_download(path: Path, name: str) -> tuple[BinaryIO, int]:
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
    except OSError:
        raise NotFound(f"File not found: {name}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotFound(f"File not found: {name}")
    return os.fdopen(fd, "rb"), info.st_size


async def open_download(settings: Settings, tenant_id: TenantId, name: str) -> tuple[BinaryIO, int]:
    """The tenant's file ``name`` for a download, and its size (NotFound otherwise)."""
    path = confine(tenant_area(settings, tenant_id), name)
    if path is None:
        raise NotFound(f"File not found: {name}")
    return await asyncio.to_thread(_open_download, path, name)
