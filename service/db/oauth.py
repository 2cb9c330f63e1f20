"""Storage of the built-in OAuth server: one function per query of ``sql/oauth.sql``.

Control plane (admin connections, like API keys): a presented code or token is looked
up by its hash before the tenant is known. The ``New*`` records list their fields in
the order of their query's ``$n`` legend; the row records are the queries' columns.
Codes and refresh tokens are used with ``UPDATE ... RETURNING`` on the live row only
(a row lock), so two concurrent requests can never both use one; the used row is kept,
so the loser's request is recognised as a replay and revokes the family.
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
    """A redeemed authorization code; ``usable``: unexpired and its key still valid."""

    tenant_id: uuid.UUID
    key_prefix: str
    client_id: str
    redirect_uri: str
    code_challenge: str
    resource: str
    scope: str
    family_id: uuid.UUID
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
    family_id: uuid.UUID


@dataclasses.dataclass(frozen=True, slots=True)
class RefreshRow:
    """A rotated refresh token (the grant a new pair is issued for); ``usable``:
    unexpired and its key still valid."""

    tenant_id: uuid.UUID
    key_prefix: str
    client_id: str
    resource: str
    scope: str
    family_id: uuid.UUID
    usable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class RevokedFamily:
    """The grant of a replayed code or refresh token, and how many tokens it lost."""

    tenant_id: uuid.UUID
    client_id: str
    key_prefix: str
    tokens_revoked: int


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
    conn: Connection,
    client_id: str,
    secret_hash: bytes | None,
    metadata: dict[str, Any],
    hourly_cap: int,
) -> bool:
    """Insert the client unless ``hourly_cap`` (0 = none) clients registered within the
    last hour; False when the cap refused it. Call under :func:`lock_oauth_registrations`
    so concurrent registrations cannot both pass a cap of one left."""
    inserted = await conn.fetchval(
        QUERIES["insert_oauth_client"], client_id, secret_hash, metadata, hourly_cap
    )
    return inserted is not None


async def lock_oauth_registrations(conn: Connection) -> None:
    """Serialise registrations until the transaction ends (they are rare)."""
    await conn.execute(QUERIES["lock_oauth_registrations"])


async def oauth_registration_wait(conn: Connection) -> float:
    """Seconds until the oldest registration of the last hour leaves the window."""
    return float(await conn.fetchval(QUERIES["oauth_registration_wait"]))


async def mark_oauth_client_used(conn: Connection, client_id: str) -> None:
    await conn.execute(QUERIES["mark_oauth_client_used"], client_id)


async def delete_unused_oauth_clients(
    conn: Connection, older_than_seconds: float, batch: int
) -> int:
    """Delete up to ``batch`` clients never issued a token, registered over
    ``older_than_seconds`` ago; returns how many."""
    return int(
        await conn.fetchval(QUERIES["delete_unused_oauth_clients"], older_than_seconds, batch)
    )


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


async def use_oauth_code(conn: Connection, code_hash: bytes) -> CodeRow | None:
    record = await conn.fetchrow(QUERIES["use_oauth_code"], code_hash)
    return None if record is None else _row(CodeRow, record)


async def revoke_code_family(conn: Connection, code_hash: bytes) -> RevokedFamily | None:
    record = await conn.fetchrow(QUERIES["revoke_code_family"], code_hash)
    return None if record is None else _row(RevokedFamily, record)


async def insert_oauth_token(conn: Connection, token: NewToken) -> None:
    await conn.execute(QUERIES["insert_oauth_token"], *dataclasses.astuple(token))


async def rotate_refresh_token(conn: Connection, token_hash: bytes) -> RefreshRow | None:
    record = await conn.fetchrow(QUERIES["rotate_refresh_token"], token_hash)
    return None if record is None else _row(RefreshRow, record)


async def revoke_refresh_family(conn: Connection, token_hash: bytes) -> RevokedFamily | None:
    record = await conn.fetchrow(QUERIES["revoke_refresh_family"], token_hash)
    return None if record is None else _row(RevokedFamily, record)


async def access_token_for_auth(conn: Connection, token_hash: bytes) -> AccessRow | None:
    record = await conn.fetchrow(QUERIES["access_token_for_auth"], token_hash)
    return None if record is None else _row(AccessRow, record, key_prefix="prefix")


async def delete_expired_oauth(conn: Connection) -> None:
    await conn.execute(QUERIES["delete_expired_oauth"])


async def revoke_oauth_token(conn: Connection, token_hash: bytes, client_id: str) -> None:
    await conn.execute(QUERIES["revoke_oauth_token"], token_hash, client_id)
