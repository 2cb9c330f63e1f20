"""Storage of the built-in OAuth server: one function per query of ``sql/oauth.sql``.

Control plane (admin connections, like API keys): a presented code or token is looked
up by its hash before the tenant is known. The ``New*`` records list their fields in
the order of their query's ``$n`` legend; the row records are the queries' columns.
Codes and refresh tokens are taken with ``DELETE ... RETURNING``, so two concurrent
requests can never both use one.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, Any, TypeVar

from service.db.pool import Connection
from service.db.sql import QUERIES

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

RowT = TypeVar("RowT", bound="DataclassInstance")


@dataclasses.dataclass(frozen=True, slots=True)
class ClientRow:
    client_id: str
    secret_hash: bytes | None
    metadata: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class NewCode:
    tenant_id: uuid.UUID
    code_hash: bytes
    client_id: str
    key_prefix: str
    redirect_uri: str
    code_challenge: str
    resource: str
    scope: str
    lifetime_seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class CodeRow:
    """A consumed authorization code; ``usable``: unexpired and its key still valid."""

    tenant_id: uuid.UUID
    key_prefix: str
    client_id: str
    redirect_uri: str
    code_challenge: str
    resource: str
    scope: str
    usable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class NewToken:
    tenant_id: uuid.UUID
    token_hash: bytes
    kind: str
    key_prefix: str
    client_id: str
    resource: str
    scope: str
    lifetime_seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class RefreshRow:
    """A consumed refresh token; ``usable``: unexpired and its key still valid."""

    tenant_id: uuid.UUID
    key_prefix: str
    client_id: str
    resource: str
    scope: str
    usable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class AccessRow:
    """What a presented access token authenticates as, and whether it does now."""

    resource: str
    key_prefix: str
    label: str
    grants: dict[str, str]
    tool_set: str
    tenant_id: uuid.UUID
    tenant_slug: str
    usable: bool
    client_id: str


async def insert_oauth_client(
    conn: Connection, client_id: str, secret_hash: bytes | None, metadata: dict[str, Any]
) -> None:
    await conn.execute(QUERIES["insert_oauth_client"], client_id, secret_hash, metadata)


async def oauth_client(conn: Connection, client_id: str) -> ClientRow | None:
    record = await conn.fetchrow(QUERIES["oauth_client"], client_id)
    if record is None:
        return None
    secret = record["secret_hash"]
    return ClientRow(
        client_id=record["client_id"],
        secret_hash=None if secret is None else bytes(secret),
        metadata=dict(record["metadata"]),
    )


def _row(cls: type[RowT], record: Any, **renamed: str) -> RowT:
    """A row dataclass from a record, field by field (``renamed``: field -> column)."""
    values = {
        field.name: record[renamed.get(field.name, field.name)] for field in dataclasses.fields(cls)
    }
    return cls(**values)


async def insert_oauth_code(conn: Connection, code: NewCode) -> None:
    await conn.execute(QUERIES["insert_oauth_code"], *dataclasses.astuple(code))


async def take_oauth_code(conn: Connection, code_hash: bytes) -> CodeRow | None:
    record = await conn.fetchrow(QUERIES["take_oauth_code"], code_hash)
    return None if record is None else _row(CodeRow, record)


async def insert_oauth_token(conn: Connection, token: NewToken) -> None:
    await conn.execute(QUERIES["insert_oauth_token"], *dataclasses.astuple(token))


async def take_refresh_token(conn: Connection, token_hash: bytes) -> RefreshRow | None:
    record = await conn.fetchrow(QUERIES["take_refresh_token"], token_hash)
    return None if record is None else _row(RefreshRow, record)


async def access_token_for_auth(conn: Connection, token_hash: bytes) -> AccessRow | None:
    record = await conn.fetchrow(QUERIES["access_token_for_auth"], token_hash)
    return None if record is None else _row(AccessRow, record, key_prefix="prefix")


async def delete_expired_oauth(conn: Connection) -> None:
    await conn.execute(QUERIES["delete_expired_oauth"])


async def revoke_oauth_token(conn: Connection, token_hash: bytes, client_id: str) -> None:
    await conn.execute(QUERIES["revoke_oauth_token"], token_hash, client_id)
