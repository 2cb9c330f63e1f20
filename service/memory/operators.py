"""Operators: keys not tied to a tenant (``key create --role operator``) that open the
web console's operator view — every tenant's counts, usage and queue health, never memory
content (docs/console.md, "Operators"). Keys look like tenants' keys (``cpk_<12 hex>_...``,
only a SHA-256 stored); their console sessions are stored and checked like tenants'
(:mod:`service.memory.console`), in tables of their own."""

from __future__ import annotations

import dataclasses
import hmac
from datetime import UTC, datetime, timedelta

from service.db import operators as operator_queries
from service.db.pool import Database
from service.errors import NotFound
from service.memory import console, tenants
from service.memory.library import Library
from service.models import TenantId

TENANTS_PAGE = 50
"""Tenants per page of the operator view (keyset by slug)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Operator:
    """Who is operating: an operator key's public id and label."""

    key_id: str
    label: str


@dataclasses.dataclass(frozen=True, slots=True)
class TenantSummary:
    slug: str
    created_at: datetime
    health: operator_queries.TenantHealth


@dataclasses.dataclass(frozen=True, slots=True)
class TenantsPage:
    tenants: list[TenantSummary]
    next_after: str | None


async def create_operator_key(
    db: Database, *, label: str = "", expires_in_days: float | None = None
) -> str:
    """A new operator key (shown once)."""
    days = tenants.expiry_days(expires_in_days)
    expires_at = None if days is None else datetime.now(UTC) + timedelta(days=days)
    prefix, key = tenants.new_key()
    async with db.admin_tx() as conn:
        await operator_queries.insert_operator_key(
            conn, prefix, tenants.hash_key(key), label, expires_at
        )
    return key


async def authenticate_operator(db: Database, key: str) -> Operator | None:
    """The operator of a presented key; None when it is none (or revoked, or expired)."""
    if not tenants.looks_like_key(key):
        return None
    async with db.admin_conn() as conn:
        row = await operator_queries.operator_key_for_auth(conn, key[: tenants.PREFIX_LENGTH])
    if row is None or not hmac.compare_digest(row.key_hash, tenants.hash_key(key)):
        return None
    return Operator(row.prefix, row.label) if row.usable else None


async def revoke_operator_key(db: Database, key_id: str) -> datetime | None:
    async with db.admin_tx() as conn:
        return await operator_queries.revoke_operator_key(conn, key_id)


async def open_session(
    db: Database, operator: Operator, *, idle_seconds: int, lifetime_seconds: float
) -> str:
    """A console session for ``operator``; its id (only the browser keeps it)."""
    session_id = console.new_session_id()
    async with db.admin_tx() as conn:
        await operator_queries.delete_ended_operator_sessions(conn)
        limits = operator_queries.SessionLimits(idle_seconds, lifetime_seconds)
        await operator_queries.insert_operator_session(
            conn, console.session_hash(session_id), operator.key_id, limits
        )
    return session_id


async def session_operator(db: Database, session_id: str) -> Operator | None:
    """The operator of a live session; None when unknown or ended (key revoked included)."""
    if not session_id or len(session_id) > 2 * console.SESSION_ID_BYTES:
        return None
    async with db.admin_conn() as conn:
        row = await operator_queries.operator_session_for_auth(
            conn, console.session_hash(session_id)
        )
    return None if row is None else Operator(row.prefix, row.label)


async def close_session(db: Database, session_id: str) -> None:
    async with db.admin_conn() as conn:
        await operator_queries.delete_operator_session(conn, console.session_hash(session_id))


async def list_tenants(lib: Library, after: str = "", limit: int = TENANTS_PAGE) -> TenantsPage:
    """A page of tenants by slug, each with its aggregates (read in its own tenant
    transaction, so row-level security holds as for the tenant itself)."""
    async with lib.db.admin_tx() as conn:
        rows = await operator_queries.operator_tenants(conn, after[:100], limit + 1)
    more = len(rows) > limit
    summaries = []
    for row in rows[:limit]:
        async with lib.db.tenant_tx(TenantId(row.id)) as conn:
            health = await operator_queries.operator_tenant_health(conn, row.id)
        summaries.append(TenantSummary(row.slug, row.created_at, health))
    return TenantsPage(summaries, rows[limit - 1].slug if more else None)


async def revoke_any_key(db: Database, key_id: str) -> datetime:
    """Revoke a tenant's key or an operator key by its KEY_ID (``key revoke``);
    NotFound when neither has it."""
    try:
        return await tenants.revoke_key(db, key_id)
    except NotFound:
        revoked = await revoke_operator_key(db, key_id)
        if revoked is None:
            raise
        return revoked
