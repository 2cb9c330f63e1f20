"""Tenants and API keys: creation, listing, revocation, and authentication.

Keys look like ``cpk_<12 hex>_<secret>``. The first 16 characters are the
public prefix (the KEY_ID shown by the CLI and stored in clear for lookup);
only a SHA-256 of the whole key is stored, compared in constant time. Keys
carry 256 bits of randomness, so a fast hash is enough (no password stretching).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import cast

from service.db import tenants as tenants_queries
from service.db.pool import Connection, Database
from service.errors import Conflict, InvalidInput, NotFound
from service.models import PERMISSIONS, TOOL_SETS, Caller, Permission, TenantId, ToolSet

KEY_SCHEME = "cpk"
PREFIX_LENGTH = 16
MAX_EXPIRY_DAYS = 36_500
"""The longest key lifetime accepted (100 years); longer means "never": omit it."""
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_KEY = re.compile(r"^cpk_[0-9a-f]{12}_[A-Za-z0-9_-]{20,100}$")


def hash_key(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def new_key() -> tuple[str, str]:
    """A fresh (prefix, key) pair."""
    prefix = f"{KEY_SCHEME}_{secrets.token_hex(6)}"
    return prefix, f"{prefix}_{secrets.token_urlsafe(32)}"


def parse_grants(items: list[str]) -> dict[str, Permission]:
    """``["AGENT=read", "*=none"]`` → grants; ``{"*": "read-write"}`` when empty."""
    grants: dict[str, Permission] = {}
    for item in items:
        agent, sep, level = item.partition("=")
        if not sep or level not in PERMISSIONS:
            raise InvalidInput(f"grant {item!r}: expected AGENT=none|read|read-write")
        grants[agent] = level
    return grants or {"*": "read-write"}


def parse_tool_set(raw: str) -> ToolSet:
    """A tool set name, validated (InvalidInput naming the choices otherwise)."""
    if raw not in TOOL_SETS:
        raise InvalidInput(f"--tools: expected one of {', '.join(TOOL_SETS)}, got {raw!r}")
    return raw  # narrowed to ToolSet by the membership test


async def create_tenant(db: Database, slug: str, name: str = "") -> tenants_queries.TenantRow:
    if not _SLUG.match(slug):
        raise InvalidInput(f"tenant slug {slug!r}: use 1-63 lower-case letters, digits, dashes")
    async with db.admin_tx() as conn:
        row = await tenants_queries.insert_tenant(conn, slug, name)
    if row is None:
        raise Conflict(f"tenant {slug!r} already exists")
    return row


async def list_tenants(db: Database) -> list[tenants_queries.TenantRow]:
    async with db.admin_tx() as conn:
        return await tenants_queries.list_tenants(conn)


async def count_tenants(db: Database) -> int:
    async with db.admin_tx() as conn:
        return await tenants_queries.count_tenants(conn)


async def _tenant(conn: Connection, slug: str) -> tenants_queries.TenantRow:
    row = await tenants_queries.tenant_by_slug(conn, slug)
    if row is None:
        raise NotFound(f"no tenant {slug!r}")
    return row


def expiry_days(raw: str | float | None) -> float | None:
    """A key lifetime in days, validated: a finite number in (0, 36500]; None = never.

    Raises InvalidInput with a one-line reason for anything else (text, ``nan``,
    ``inf``, zero, negative, or more than 100 years, which no date could hold).
    """
    if raw is None:
        return None
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not (math.isfinite(days) and 0 < days <= MAX_EXPIRY_DAYS):
        raise InvalidInput(
            f"--expires-in: expected a number of days above 0 and at most {MAX_EXPIRY_DAYS} "
            f"(omit it for a key that never expires), got {raw!r}"
        )
    return days


def key_state(row: tenants_queries.KeyRow, now: datetime | None = None) -> str:
    """``revoked``, ``expired`` or ``active``: what authentication would decide now."""
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and row.expires_at <= (now or datetime.now(UTC)):
        return "expired"
    return "active"


async def create_key(
    db: Database,
    slug: str,
    *,
    label: str = "",
    grants: dict[str, Permission] | None = None,
    expires_in_days: float | None = None,
    tool_set: str = "all",
) -> str:
    """Create a key for tenant ``slug`` and return it (the only time it is visible).

    ``tool_set`` is which tools the key lists and may call (:data:`TOOL_SETS`).
    """
    expires_in_days = expiry_days(expires_in_days)
    checked_set = parse_tool_set(tool_set)
    expires_at = (
        None if expires_in_days is None else datetime.now(UTC) + timedelta(days=expires_in_days)
    )
    prefix, key = new_key()
    async with db.admin_tx() as conn:
        tenant = await _tenant(conn, slug)
        await tenants_queries.insert_api_key(
            conn,
            tenant.id,
            prefix,
            hash_key(key),
            label,
            dict(grants or {"*": "read-write"}),
            expires_at,
            checked_set,
        )
    return key


async def list_keys(db: Database, slug: str) -> list[tenants_queries.KeyRow]:
    async with db.admin_tx() as conn:
        tenant = await _tenant(conn, slug)
        return await tenants_queries.list_api_keys(conn, tenant.id)


async def revoke_key(db: Database, key_id: str) -> datetime:
    async with db.admin_tx() as conn:
        revoked_at = await tenants_queries.revoke_api_key(conn, key_id)
    if revoked_at is None:
        raise NotFound(f"no key {key_id!r}")
    return revoked_at


def looks_like_key(key: str) -> bool:
    """Whether ``key`` has the shape of a key (checked before any lookup)."""
    return _KEY.match(key) is not None


async def authenticate(db: Database, key: str) -> Caller | None:
    """Resolve a presented key to its caller; None when unknown, revoked or expired."""
    if not looks_like_key(key):
        return None
    async with db.admin_conn() as conn:  # one statement, one round trip (no BEGIN/COMMIT)
        row = await tenants_queries.api_key_for_auth(conn, key[:PREFIX_LENGTH])
        if row is None or not hmac.compare_digest(row.key_hash, hash_key(key)):
            return None
        if row.revoked or row.expired:
            return None
        if row.touch_due:
            await tenants_queries.touch_api_key(conn, row.prefix)
    grants = {agent: cast(Permission, level) for agent, level in row.grants.items()}
    return Caller(
        tenant_id=TenantId(row.tenant_id),
        tenant_slug=row.tenant_slug,
        key_id=row.prefix,
        label=row.label,
        grants=grants,
        tool_set=parse_tool_set(row.tool_set),
    )
