"""Storage of tenants and API keys (control plane: admin transactions only)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES


@dataclasses.dataclass(frozen=True, slots=True)
class TenantRow:
    id: uuid.UUID
    slug: str
    name: str
    created_at: datetime
    active_keys: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class KeyRow:
    prefix: str
    label: str
    grants: dict[str, str]
    tool_set: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


@dataclasses.dataclass(frozen=True, slots=True)
class AuthRow:
    prefix: str
    key_hash: bytes
    label: str
    grants: dict[str, str]
    tool_set: str
    expired: bool
    revoked: bool
    touch_due: bool
    tenant_id: uuid.UUID
    tenant_slug: str


def _tenant(record: Any) -> TenantRow:
    return TenantRow(
        id=record["id"],
        slug=record["slug"],
        name=record["name"],
        created_at=record["created_at"],
        active_keys=record.get("active_keys", 0) if hasattr(record, "get") else 0,
    )


async def insert_tenant(conn: Connection, slug: str, name: str) -> TenantRow | None:
    record = await conn.fetchrow(QUERIES["insert_tenant"], slug, name)
    return None if record is None else _tenant(record)


async def list_tenants(conn: Connection) -> list[TenantRow]:
    return [_tenant(r) for r in await conn.fetch(QUERIES["list_tenants"])]


async def tenant_by_slug(conn: Connection, slug: str) -> TenantRow | None:
    record = await conn.fetchrow(QUERIES["tenant_by_slug"], slug)
    return None if record is None else _tenant(record)


async def count_tenants(conn: Connection) -> int:
    return int(await conn.fetchval(QUERIES["count_tenants"]))


async def insert_api_key(
    conn: Connection,
    tenant_id: uuid.UUID,
    prefix: str,
    key_hash: bytes,
    label: str,
    grants: dict[str, str],
    expires_at: datetime | None,
    tool_set: str,
) -> None:
    await conn.execute(
        QUERIES["insert_api_key"], tenant_id, prefix, key_hash, label, grants, expires_at, tool_set
    )


async def api_key_for_auth(conn: Connection, prefix: str) -> AuthRow | None:
    record = await conn.fetchrow(QUERIES["api_key_for_auth"], prefix)
    if record is None:
        return None
    return AuthRow(
        prefix=record["prefix"],
        key_hash=bytes(record["key_hash"]),
        label=record["label"],
        grants=dict(record["grants"]),
        tool_set=record["tool_set"],
        expired=bool(record["expired"]),
        revoked=record["revoked_at"] is not None,
        touch_due=bool(record["touch_due"]),
        tenant_id=record["tenant_id"],
        tenant_slug=record["tenant_slug"],
    )


async def touch_api_key(conn: Connection, prefix: str) -> None:
    await conn.execute(QUERIES["touch_api_key"], prefix)


async def list_api_keys(conn: Connection, tenant_id: uuid.UUID) -> list[KeyRow]:
    records = await conn.fetch(QUERIES["list_api_keys"], tenant_id)
    return [
        KeyRow(
            prefix=r["prefix"],
            label=r["label"],
            grants=dict(r["grants"]),
            tool_set=r["tool_set"],
            created_at=r["created_at"],
            last_used_at=r["last_used_at"],
            expires_at=r["expires_at"],
            revoked_at=r["revoked_at"],
        )
        for r in records
    ]


async def revoke_api_key(conn: Connection, prefix: str) -> datetime | None:
    record = await conn.fetchrow(QUERIES["revoke_api_key"], prefix)
    return None if record is None else record["revoked_at"]
