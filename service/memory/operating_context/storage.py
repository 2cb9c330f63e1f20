"""The operating context in Postgres: read per tenant, set, show and clear by slug."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from service.db import operating_context as operating_context_queries, tenants as tenants_queries
from service.db.pool import Connection, Database
from service.errors import InvalidInput, NotFound
from service.logs import get_logger
from service.memory.library import Library
from service.memory.operating_context.model import OperatingContext
from service.memory.operating_context.parse import parse, parse_document, to_document
from service.models import TenantId

log = get_logger(__name__)


async def get_context(lib: Library, tenant_id: TenantId) -> OperatingContext | None:
    """The tenant's context, or None when dormant.

    A stored document that no longer validates (edited by hand in psql) makes the
    tenant dormant and is logged, as an unusable sidecar does in CPersona: a
    broken context must never take memory down.
    """
    async with lib.db.tenant_tx(tenant_id) as conn:
        row = await operating_context_queries.operating_context(conn, tenant_id)
    if row is None:
        return None
    try:
        return parse_document(row.document)
    except InvalidInput as exc:
        log.warning("operating_context_unusable", tenant_id=str(tenant_id), error=exc.message)
        return None


async def instructions_for(lib: Library, tenant_id: TenantId) -> str | None:
    """The MCP ``instructions`` for this tenant's clients; None when dormant or blank."""
    context = await get_context(lib, tenant_id)
    if context is None or not context.summary.strip():
        return None
    return context.summary


@dataclasses.dataclass(frozen=True, slots=True)
class Stored:
    """A context as the operator set it."""

    context: OperatingContext
    updated_at: datetime
    warnings: tuple[str, ...] = ()


async def _tenant_id(conn: Connection, slug: str) -> TenantId:
    row = await tenants_queries.tenant_by_slug(conn, slug)
    if row is None:
        raise NotFound(f"no tenant {slug!r}")
    tenant_id = TenantId(row.id)
    await operating_context_queries.scope_admin_to_tenant(conn, tenant_id)
    return tenant_id


async def set_context(db: Database, slug: str, toml_text: str) -> Stored:
    """Validate ``toml_text`` and make it tenant ``slug``'s context (replacing any).

    Validation happens before the database is touched, so an invalid file
    stores nothing.
    """
    parsed = parse(toml_text)
    context = parsed.context
    async with db.admin_tx() as conn:
        tenant_id = await _tenant_id(conn, slug)
        updated_at = await operating_context_queries.upsert_operating_context(
            conn, tenant_id, context.revision, to_document(context)
        )
    return Stored(context, updated_at, parsed.warnings)


async def show_context(db: Database, slug: str) -> Stored | None:
    """Tenant ``slug``'s stored context for the operator; None when dormant."""
    async with db.admin_tx() as conn:
        row = await operating_context_queries.operating_context(conn, await _tenant_id(conn, slug))
    return None if row is None else Stored(parse_document(row.document), row.updated_at)


async def clear_context(db: Database, slug: str) -> str | None:
    """Remove tenant ``slug``'s context (it becomes dormant); the removed revision, or None."""
    async with db.admin_tx() as conn:
        return await operating_context_queries.delete_operating_context(
            conn, await _tenant_id(conn, slug)
        )
