"""The export area of a tenant: its catalogue, the grants on it, retention and quota.

Every file (an export, or an upload) has a row in ``export_files``: the agents whose
records it holds, the key that wrote it, its size and its expiry. The rules, checked
on every path (tools and HTTP routes alike):

- reading a file (``import_memories``, a download) needs ``read`` on every agent it
  holds; overwriting one (an export or upload to a name in use) needs ``read-write``
  on every agent it holds;
- files expire ``CPERSONA_EXPORT_RETENTION_HOURS`` after they were written: an
  expired file is gone for every operation at once (rows are filtered by expiry),
  and it is deleted on the tenant's next area operation and by :func:`sweep`;
- a tenant's live files never take more than ``CPERSONA_EXPORT_QUOTA_BYTES``: a write
  stops as soon as it would pass the quota (nothing is kept) and is refused;
- ``delete_agent_data`` removes every file that holds the agent.

A new version is written under a fresh storage name and fsynced, then recorded in
one transaction that serialises the tenant's area writes (the overwrite check and
the quota are re-checked there); the old version's file is removed after the commit.
A crash leaves at worst a file no row names, which :func:`sweep` removes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Collection
from typing import BinaryIO

from service.db import export_area as export_area_queries, queue as queue_queries
from service.db.pool import Connection
from service.errors import NotFound, Refused
from service.logs import get_logger
from service.memory.library import Library
from service.memory.portability import files
from service.memory.portability.access import Access, require
from service.models import TenantId

log = get_logger("service.portability")
STRAY_GRACE_SECONDS = 3600.0
"""A file no row names is removed once this old (a write in progress is younger)."""
SWEEP_INTERVAL_SECONDS = 300.0

ExportFile = export_area_queries.ExportFile
Produce = Callable[[files.Write], Awaitable[Collection[str]]]
"""Writes a file's content through the given writer; returns the agents it holds."""


class QuotaExceeded(Refused):
    """The write would take the tenant's export area past CPERSONA_EXPORT_QUOTA_BYTES."""

    def __init__(self, quota: int, used: int) -> None:
        super().__init__(
            f"export area quota exceeded: your files use {used} of {quota} bytes "
            "(CPERSONA_EXPORT_QUOTA_BYTES); overwrite or wait for old files to expire",
            quota_bytes=quota,
            used_bytes=used,
        )
        self.quota = quota


def _retention_seconds(lib: Library) -> float:
    return lib.settings.export_retention_hours * 3600.0


async def find(lib: Library, tenant_id: TenantId, name: str) -> ExportFile | None:
    """The tenant's live file ``name``, or None; the tenant's expired files are deleted
    on the way (retention on access)."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        gone = await export_area_queries.delete_expired_export_files(conn, tenant_id)
        found = await export_area_queries.export_file(conn, tenant_id, name)
    await files.remove_stored(files.tenant_area(lib.settings, tenant_id), gone)
    return found


async def open_file(
    lib: Library,
    tenant_id: TenantId,
    access: Access,
    name: str,
    *,
    limit: int | None,
    version: str | None = None,
) -> tuple[BinaryIO, int]:
    """The file ``name`` opened for reading (import or download) and its size.

    NotFound when there is no live file of that name (or, with ``version``, when the
    live one is another version: a download link of a replaced file), AgentDenied
    unless ``access`` may read every agent it holds, InputTooLarge above ``limit``.
    """
    found = await find(lib, tenant_id, name)
    if found is None or version not in (None, found.storage):
        raise NotFound(f"File not found: {name}")
    require(access, found.agents, "read")
    area = files.tenant_area(lib.settings, tenant_id)
    return await files.open_stored(area, found.storage, name, limit)


@dataclasses.dataclass(frozen=True, slots=True)
class _Budget:
    quota: int
    used: int

    def check(self, size: int) -> None:
        if self.used + size > self.quota:
            raise QuotaExceeded(self.quota, self.used)


async def _budget(conn: Connection, lib: Library, tenant_id: TenantId, name: str) -> _Budget:
    used = await export_area_queries.export_area_usage(conn, tenant_id, name)
    return _Budget(lib.settings.export_quota_bytes, used)


async def _before_write(lib: Library, tenant_id: TenantId, access: Access, name: str) -> _Budget:
    """Refuse early (before any byte is written): overwrite grants, a full quota."""
    existing = await find(lib, tenant_id, name)
    async with lib.db.tenant_tx(tenant_id) as conn:
        budget = await _budget(conn, lib, tenant_id, name)
    if existing is not None:
        require(access, existing.agents, "read-write")
    budget.check(1)
    return budget


async def _record(
    lib: Library, tenant_id: TenantId, access: Access, new: export_area_queries.NewExportFile
) -> str | None:
    """Point the catalogue at the new version, re-checking under the area's lock what
    :func:`_before_write` checked; the storage of the replaced version."""
    async with lib.db.tenant_tx(tenant_id) as conn:
        await export_area_queries.lock_export_area(conn, tenant_id)
        existing = await export_area_queries.export_file(conn, tenant_id, new.name)
        if existing is not None:
            require(access, existing.agents, "read-write")
        (await _budget(conn, lib, tenant_id, new.name)).check(new.size_bytes)
        return await export_area_queries.save_export_file(conn, tenant_id, new)


async def write_file(
    lib: Library, tenant_id: TenantId, access: Access, name: str, produce: Produce
) -> export_area_queries.NewExportFile:
    """Write a new version of file ``name`` with ``produce`` and record it.

    Refused (nothing kept, the previous version untouched) with AgentDenied when
    ``name`` holds an agent ``access`` may not write, QuotaExceeded when the area
    would pass its quota, or whatever ``produce`` raises.
    """
    budget = await _before_write(lib, tenant_id, access, name)
    area = files.tenant_area(lib.settings, tenant_id)
    async with files.new_stored_file(area) as stored:

        async def write(data: bytes) -> None:
            budget.check(stored.size + len(data))
            await stored.write(data)

        agents = sorted(set(await produce(write)))
        await stored.finish()
        new = export_area_queries.NewExportFile(
            name, stored.storage, agents, access.key_id, stored.size, _retention_seconds(lib)
        )
        replaced = await _record(lib, tenant_id, access, new)
    if replaced is not None:
        await files.remove_stored(area, [replaced])
    return new


async def forget_agent_files(conn: Connection, tenant_id: TenantId, agent: str) -> list[str]:
    """Remove the catalogue rows of every file holding ``agent`` (in the caller's
    transaction); pass the result to :func:`remove_files` once it commits."""
    return await export_area_queries.delete_agent_export_files(conn, tenant_id, agent)


async def remove_files(lib: Library, tenant_id: TenantId, storages: list[str]) -> None:
    await files.remove_stored(files.tenant_area(lib.settings, tenant_id), storages)


async def sweep_tenant(lib: Library, tenant_id: TenantId) -> int:
    """Delete one tenant's expired files and the files no row names; how many files went."""
    area = files.tenant_area(lib.settings, tenant_id)
    async with lib.db.tenant_tx(tenant_id) as conn:
        gone = await export_area_queries.delete_expired_export_files(conn, tenant_id)
    await files.remove_stored(area, gone)
    async with lib.db.tenant_tx(tenant_id) as conn:
        known = await export_area_queries.export_storage_names(conn, tenant_id)
    return len(gone) + await files.remove_strays(area, known, STRAY_GRACE_SECONDS)


async def sweep(lib: Library) -> int:
    """:func:`sweep_tenant` for every tenant whose area exists; how many files went."""
    root = files.export_root(lib.settings)
    if not root.is_dir():
        return 0
    async with lib.db.admin_tx() as conn:
        tenants = await queue_queries.tenant_ids(conn)
    present = {entry.name for entry in root.iterdir()}
    removed = 0
    for tenant_id in tenants:
        if str(tenant_id) in present:
            removed += await sweep_tenant(lib, tenant_id)
    return removed


async def run_sweeper(
    lib: Library, stop: asyncio.Event, interval: float = SWEEP_INTERVAL_SECONDS
) -> None:
    """Sweep every ``interval`` seconds until ``stop`` is set (errors are logged, the
    next round tries again: a database restart must not end the retention)."""
    while not stop.is_set():
        try:
            removed = await sweep(lib)
        except Exception:  # retention must outlive a failed round
            log.exception("export area sweep failed")
        else:
            if removed:
                log.info("export area sweep", removed=removed)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
