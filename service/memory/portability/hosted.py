"""The hosted form of export_memories / import_memories (docs/portability.md, "The format";
docs/portability.md, "Import rules"; docs/architecture.md, "Recall").

The tools keep CPersona's names and parameters, but ``output_path`` and
``input_path`` name files in the caller's own export area (see ``export_area``),
not anywhere on the server. An export is recorded with the agents it holds and
answered with a ``download_url`` (``/v1/files/<token>``, signed, bound to the
tenant and to this version of the file, valid 15 minutes); an import reads a file
that an export wrote or that was uploaded with ``POST /v1/files/<name>``. Both
obey the area's grants: reading a file needs read on every agent it holds,
replacing one read-write on every agent it holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable

from service.db.portability import ItemCounts
from service.errors import Refused
from service.memory.library import Library
from service.memory.portability import export, export_area, files, import_, signing
from service.memory.portability.access import Access
from service.memory.portability.outcomes import Exported, Imported
from service.models import TenantId

DOWNLOAD_PATH = "/v1/files/"


def download_url(lib: Library, tenant_id: TenantId, name: str, storage: str) -> tuple[str, str]:
    """A signed URL for version ``storage`` of the tenant's file ``name`` and its expiry
    (ISO-8601 UTC). Absolute when CPERSONA_PUBLIC_URL is set, else a path on this
    server (the MCP endpoint's origin)."""
    key = signing.signing_key(lib.settings)
    token, expires_at = signing.issue(key, tenant_id, name, storage)
    return f"{lib.settings.public_url}{DOWNLOAD_PATH}{token}", expires_at.isoformat()


async def export_to_area(
    lib: Library,
    tenant_id: TenantId,
    access: Access,
    output_path: str,
    request: export.ExportRequest,
) -> Exported:
    """Export into the tenant's area as ``output_path``; counts and a download URL."""
    files.check_name(output_path, "output_path")
    counts: list[ItemCounts] = []

    async def produce(write: files.Write) -> set[str]:
        seen: set[str] = set()
        counts.append(await export.export_jsonl(lib, tenant_id, request, write, seen=seen))
        return {request.agent_id} if request.agent_id else seen

    try:
        saved = await export_area.write_file(lib, tenant_id, access, output_path, produce)
    except OSError as exc:
        raise Refused(f"cannot write {output_path}: {exc.strerror or exc}") from None
    url, expires_at = download_url(lib, tenant_id, output_path, saved.storage)
    return Exported(path=output_path, counts=counts[0], download_url=url, expires_at=expires_at)


async def import_from_area(
    lib: Library,
    tenant_id: TenantId,
    access: Access,
    input_path: str,
    request: import_.ImportRequest,
) -> Imported:
    """Import the tenant's file ``input_path``: NotFound, AgentDenied (an agent it holds
    is not readable), InputTooLarge, or Refused when the import aborts."""
    files.check_name(input_path, "input_path")
    limit = lib.settings.max_import_bytes
    handle, _ = await export_area.open_file(lib, tenant_id, access, input_path, limit=limit)
    reader = files.read_chunks(handle, limit, input_path)
    checked = import_.ImportRequest(
        request.target_agent_id, request.dry_run, lambda agent: access.allows(agent, "read")
    )
    try:
        async with contextlib.aclosing(reader) as chunks:
            return await import_.import_jsonl(lib, tenant_id, chunks, checked)
    except OSError as exc:
        raise Refused(f"could not read {input_path}: {exc.strerror or exc}") from None


async def upload_to_area(
    lib: Library, tenant_id: TenantId, access: Access, name: str, body: AsyncIterable[bytes]
) -> int:
    """Store an uploaded file as ``name`` and record the agents its records hold; the
    byte count. InputTooLarge past CPERSONA_MAX_IMPORT_BYTES, QuotaExceeded past the
    area's quota, AgentDenied when ``name`` holds an agent the caller may not write
    (nothing is kept in each case)."""
    files.check_name(name, "file name")

    async def produce(write: files.Write) -> set[str]:
        scanner = import_.AgentScanner()
        async for chunk in files.bounded(body, lib.settings.max_import_bytes):
            scanner.feed(chunk)
            await write(chunk)
        return scanner.finish()

    saved = await export_area.write_file(lib, tenant_id, access, name, produce)
    return saved.size_bytes
