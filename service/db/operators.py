"""Storage of operator keys and their console sessions: one function per query of
``sql/operators.sql``. Control plane (admin connections), except
``operator_tenant_health``, which runs in the tenant's own transaction."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

from service.db.pool import Connection
from service.db.sql import QUERIES


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorKeyRow:
    prefix: str
    key_hash: bytes
    label: str
    usable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorRow:
    prefix: str
    label: str


@dataclasses.dataclass(frozen=True, slots=True)
class TenantRow:
    id: uuid.UUID
    slug: str
    created_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class TenantHealth:
    """One tenant's aggregates: never content."""

    agents: int
    memories: int
    episodes: int
    calls: int
    tokens_delivered: int
    pending: int
    oldest_pending_seconds: float | None


async def insert_operator_key(
    conn: Connection, prefix: str, key_hash: bytes, label: str, expires_at: datetime | None
) -> None:
    await conn.execute(QUERIES["insert_operator_key"], prefix, key_hash, label, expires_at)


async def operator_key_for_auth(conn: Connection, prefix: str) -> OperatorKeyRow | None:
    record = await conn.fetchrow(QUERIES["operator_key_for_auth"], prefix)
    if record is None:
        return None
    return OperatorKeyRow(
        record["prefix"], bytes(record["key_hash"]), record["label"], record["usable"]
    )


async def revoke_operator_key(conn: Connection, prefix: str) -> datetime | None:
    revoked: datetime | None = await conn.fetchval(QUERIES["revoke_operator_key"], prefix)
    return revoked


@dataclasses.dataclass(frozen=True, slots=True)
class SessionLimits:
    """How long an operator session may idle, and live at most (seconds)."""

    idle_seconds: int
    lifetime_seconds: float


async def insert_operator_session(
    conn: Connection, session_hash: bytes, key_prefix: str, limits: SessionLimits
) -> None:
    await conn.execute(
        QUERIES["insert_operator_session"],
        session_hash,
        key_prefix,
        *dataclasses.astuple(limits),
    )


async def operator_session_for_auth(conn: Connection, session_hash: bytes) -> OperatorRow | None:
    record = await conn.fetchrow(QUERIES["operator_session_for_auth"], session_hash)
    return None if record is None else OperatorRow(record["prefix"], record["label"])


async def delete_operator_session(conn: Connection, session_hash: bytes) -> None:
    await conn.execute(QUERIES["delete_operator_session"], session_hash)


async def delete_ended_operator_sessions(conn: Connection) -> None:
    await conn.execute(QUERIES["delete_ended_operator_sessions"])


async def operator_tenants(conn: Connection, after: str, page_size: int) -> list[TenantRow]:
    records = await conn.fetch(QUERIES["operator_tenants"], after, page_size)
    return [TenantRow(r["id"], r["slug"], r["created_at"]) for r in records]


async def operator_tenant_health(conn: Connection, tenant_id: uuid.UUID) -> TenantHealth:
    record = await conn.fetchrow(QUERIES["operator_tenant_health"], tenant_id)
    assert record is not None  # one row of aggregates, always
    return TenantHealth(**dict(record))
