"""The hosted form of export_memories / import_memories (spec §10.3, §10.4, §13).

The tools keep CPersona's names and parameters, but ``output_path`` and
``input_path`` name files in the caller's own export area (see ``files``), not
anywhere on the server. An export is written atomically and answered with a
``download_url`` (``/v1/files/<token>``, signed, bound to the tenant and the
file, valid 15 minutes); an import reads a file that a previous export wrote
or that was uploaded with ``POST /v1/files/<name>``.
"""

from __future__ import annotations

import contextlib

from service.errors import InvalidInput, Refused
from service.memory.library import Library
from service.memory.portability import export, files, import_, signing
from service.models import JsonObject, TenantId

DOWNLOAD_PATH = "/v1/files/"


def download_url(lib: Library, tenant_id: TenantId, name: str) -> tuple[str, str]:
    """A signed URL for the tenant's file ``name`` and its expiry (ISO-8601 UTC).

    Absolute when CPERSONA_PUBLIC_URL is set, else a path on this server (the
    MCP endpoint's origin).
    """
    token, expires_at = signing.issue(signing.signing_key(lib.settings), tenant_id, name)
    return f"{lib.settings.public_url}{DOWNLOAD_PATH}{token}", expires_at.isoformat()


async def export_to_area(
    lib: Library, tenant_id: TenantId, output_path: str, request: export.ExportRequest
) -> JsonObject:
    """Export into the tenant's area as ``output_path``; counts and a download URL."""
    area = files.tenant_area(lib.settings, tenant_id)
    path = files.confine(area, output_path)
    if path is None:
        raise InvalidInput(
            f"output_path rejected (path traversal or outside export dir): {output_path}"
        )
    try:
        async with files.atomic_file(path) as write:
            counts = await export.export_jsonl(lib, tenant_id, request, write)
    except OSError as exc:
        raise Refused(f"cannot write {output_path}: {exc.strerror or exc}") from None
    url, expires_at = download_url(lib, tenant_id, output_path)
    return {
        "ok": True,
        "path": output_path,
        "memories": counts.memories,
        "episodes": counts.episodes,
        "profiles": counts.profiles,
        "download_url": url,
        "expires_at": expires_at,
    }


async def import_from_area(
    lib: Library, tenant_id: TenantId, input_path: str, request: import_.ImportRequest
) -> JsonObject:
    """Import the tenant's file ``input_path`` (regular file, size-capped); Refused when
    the file cannot be used (see ``files.open_for_import``) or the import aborts."""
    handle, _ = await files.open_for_import(lib.settings, tenant_id, input_path)
    reader = files.read_chunks(handle, lib.settings.max_import_bytes, input_path)
    try:
        async with contextlib.aclosing(reader) as chunks:
            return await import_.import_jsonl(lib, tenant_id, chunks, request)
    except OSError as exc:
        raise Refused(f"could not read {input_path}: {exc.strerror or exc}") from None
