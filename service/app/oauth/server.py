"""The built-in authorization server's state: clients, codes and tokens in Postgres.

A person authorizes a connector by pasting an API key on the consent page; the code and
every token issued from it name that key, and authentication joins the key row, so the
token's grants are the key's (never more) and revoking the key ends its tokens on the
next request. Codes, tokens and client secrets are 256-bit random strings stored as
SHA-256 hashes (no stretching needed at that entropy). Codes are single use and expire
after ``CODE_SECONDS``; a refresh token is exchanged once (rotation); PKCE is S256 only;
redirect URIs are compared as exact strings.

Every token issued from one code, and every pair rotated from them, is one *family*.
Used codes and rotated refresh tokens are kept (as hashes), so presenting one again is
recognised as a replay: one of the two holders is not the client, and which one cannot
be told, so the whole family is revoked and :class:`GrantReplayed` raised (OAuth 2.1
section 4.3.1, RFC 9700 sections 2.2.2 and 4.14.2). The use, the checks and the new
tokens are one transaction, so a concurrent replay waits for the tokens it revokes.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import secrets
from collections.abc import Sequence
from typing import Any, Final, cast

from service.app.oauth.refusals import GrantReplayed, OAuthRefusal, RegistrationsFull, ReplayedGrant
from service.db import oauth as oauth_queries
from service.db.pool import Connection, Database
from service.memory import tenants
from service.models import Caller, Permission, TenantId

CODE_SECONDS: Final = 120.0
ACCESS_PREFIX: Final = "cpo_"
REFRESH_PREFIX: Final = "cpr_"
EXPIRY_BATCH: Final = 1000
"""Unused clients deleted per transaction."""


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier`` (RFC 7636 section 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


@dataclasses.dataclass(frozen=True, slots=True)
class Client:
    """A registered client as the authorization endpoints need it."""

    client_id: str
    name: str
    redirect_uris: tuple[str, ...]
    grant_types: tuple[str, ...]
    auth_method: str
    secret_hash: bytes | None

    def secret_matches(self, presented: str | None) -> bool:
        """Public clients present none; confidential ones their secret."""
        if self.secret_hash is None:
            return presented is None or presented == ""
        return presented is not None and hmac.compare_digest(self.secret_hash, _hash(presented))


@dataclasses.dataclass(frozen=True, slots=True)
class Lifetimes:
    access_seconds: float
    refresh_seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class Tokens:
    """A token response's content."""

    access_token: str
    refresh_token: str
    expires_in: int
    scope: str


@dataclasses.dataclass(frozen=True, slots=True)
class Consent:
    """What a person approved on the consent page, checked already by the endpoint."""

    client_id: str
    redirect_uri: str
    code_challenge: str
    resource: str
    scope: str


@dataclasses.dataclass(frozen=True, slots=True)
class CodeExchange:
    """A token request of the authorization_code grant."""

    code: str
    client_id: str
    redirect_uri: str | None
    code_verifier: str
    resource: str | None


async def register_client(
    db: Database, metadata: dict[str, Any], confidential: bool, hourly_cap: int = 0
) -> tuple[str, str | None]:
    """Store a client's metadata; returns (client_id, secret or None for a public client).

    ``hourly_cap`` bounds the registrations of the last hour from everyone together (0 =
    none): beyond it :class:`RegistrationsFull`. The count is in the database, so every
    replica shares it, and registrations take turns, so concurrent ones cannot overshoot.
    """
    client_id = secrets.token_urlsafe(18)
    secret = secrets.token_urlsafe(32) if confidential else None
    secret_hash = None if secret is None else _hash(secret)
    async with db.admin_tx() as conn:
        if hourly_cap:
            await oauth_queries.lock_oauth_registrations(conn)
        if await oauth_queries.insert_oauth_client(
            conn, client_id, secret_hash, metadata, hourly_cap
        ):
            return client_id, secret
        wait = await oauth_queries.oauth_registration_wait(conn)
    raise RegistrationsFull(hourly_cap, wait)


async def expire_unused_clients(db: Database, older_than_hours: float) -> int:
    """Delete the clients no token was ever issued to that registered more than
    ``older_than_hours`` ago (junk or abandoned registrations; ``/register`` takes no
    credential); returns how many. In batches of their own transactions."""
    deleted = 0
    while True:
        async with db.admin_tx() as conn:
            batch = await oauth_queries.delete_unused_oauth_clients(
                conn, older_than_hours * 3600, EXPIRY_BATCH
            )
        deleted += batch
        if batch < EXPIRY_BATCH:
            return deleted


async def find_client(db: Database, client_id: str) -> Client | None:
    if not client_id or len(client_id) > 200:
        return None
    async with db.admin_conn() as conn:
        row = await oauth_queries.oauth_client(conn, client_id)
    if row is None:
        return None
    meta = row.metadata
    return Client(
        client_id=row.client_id,
        name=str(meta.get("client_name") or row.client_id),
        redirect_uris=tuple(str(uri) for uri in meta.get("redirect_uris", [])),
        grant_types=tuple(str(g) for g in meta.get("grant_types", ["authorization_code"])),
        auth_method=str(meta.get("token_endpoint_auth_method", "none")),
        secret_hash=row.secret_hash,
    )


async def issue_code(db: Database, caller: Caller, consent: Consent) -> str:
    """An authorization code for ``consent``, issued from the caller's key."""
    code = secrets.token_urlsafe(32)
    async with db.admin_tx() as conn:
        await oauth_queries.delete_expired_oauth(conn)
        await oauth_queries.insert_oauth_code(
            conn,
            oauth_queries.NewCode(
                tenant_id=caller.tenant_id,
                code_hash=_hash(code),
                key_prefix=caller.key_id,
                client_id=consent.client_id,
                redirect_uri=consent.redirect_uri,
                code_challenge=consent.code_challenge,
                resource=consent.resource,
                scope=consent.scope,
                lifetime_seconds=CODE_SECONDS,
            ),
        )
    return code


def _check_code(row: oauth_queries.CodeRow, exchange: CodeExchange) -> OAuthRefusal | None:
    """Why a redeemed code gives no tokens to ``exchange``, or None."""
    if row.client_id != exchange.client_id or not row.usable:
        return OAuthRefusal("invalid_grant", "the authorization code is unknown, used or expired")
    if exchange.redirect_uri is not None and exchange.redirect_uri != row.redirect_uri:
        return OAuthRefusal("invalid_grant", "redirect_uri differs from the authorization request")
    if not hmac.compare_digest(s256(exchange.code_verifier), row.code_challenge):
        return OAuthRefusal("invalid_grant", "code_verifier does not match the code_challenge")
    if exchange.resource is not None and exchange.resource != row.resource:
        return OAuthRefusal("invalid_target", "resource differs from the authorization request")
    return None


def _replayed(grant: str, family: oauth_queries.RevokedFamily | None, unknown: str) -> OAuthRefusal:
    """The refusal of a code or refresh token that is not live: a replay when it was
    used (its family is revoked by then), else unknown or expired."""
    if family is None:
        return OAuthRefusal("invalid_grant", unknown)
    replayed = ReplayedGrant(grant, family.tenant_id, family.client_id, family.key_prefix)
    return GrantReplayed(replayed, family.tokens_revoked)


def _grant_of(code: oauth_queries.CodeRow) -> oauth_queries.RefreshRow:
    """The grant a valid code's tokens are issued for (the family its redemption began)."""
    return oauth_queries.RefreshRow(
        code.tenant_id, code.key_prefix, code.client_id, code.resource, code.scope,
        code.family_id, usable=True,
    )  # fmt: skip


async def redeem_code(db: Database, exchange: CodeExchange, lifetimes: Lifetimes) -> Tokens:
    """Exchange a code for tokens of a new family. The code is used even when the request
    is refused; a used code presented again revokes its family (GrantReplayed)."""
    code_hash = _hash(exchange.code)
    async with db.admin_tx() as conn:
        row = await oauth_queries.use_oauth_code(conn, code_hash)
        if row is None:
            family = await oauth_queries.revoke_code_family(conn, code_hash)
            outcome: Tokens | OAuthRefusal = _replayed(
                "authorization_code", family, "the authorization code is unknown, used or expired"
            )
        else:
            outcome = _check_code(row, exchange) or await _issue_tokens(
                conn, _grant_of(row), lifetimes
            )
    if isinstance(outcome, OAuthRefusal):
        raise outcome
    return outcome


def _check_refresh(
    row: oauth_queries.RefreshRow, client_id: str, resource: str | None
) -> OAuthRefusal | None:
    if row.client_id != client_id or not row.usable:
        return OAuthRefusal("invalid_grant", "the refresh token is unknown, used or expired")
    if resource is not None and resource != row.resource:
        return OAuthRefusal("invalid_target", "resource differs from the one the token is for")
    return None


async def refresh(
    db: Database, refresh_token: str, client_id: str, resource: str | None, lifetimes: Lifetimes
) -> Tokens:
    """A new token pair of the same family for a refresh token, which is rotated (kept,
    never exchanged again); a rotated token presented again revokes its family
    (GrantReplayed)."""
    token_hash = _hash(refresh_token)
    async with db.admin_tx() as conn:
        row = await oauth_queries.rotate_refresh_token(conn, token_hash)
        if row is None:
            family = await oauth_queries.revoke_refresh_family(conn, token_hash)
            outcome: Tokens | OAuthRefusal = _replayed(
                "refresh_token", family, "the refresh token is unknown, used or expired"
            )
        else:
            outcome = _check_refresh(row, client_id, resource) or await _issue_tokens(
                conn, row, lifetimes
            )
    if isinstance(outcome, OAuthRefusal):
        raise outcome
    return outcome


async def _issue_tokens(
    conn: Connection, grant: oauth_queries.RefreshRow, lifetimes: Lifetimes
) -> Tokens:
    """A new access and refresh token of ``grant``'s family (in the caller's transaction)."""
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh_token = REFRESH_PREFIX + secrets.token_urlsafe(32)
    await oauth_queries.mark_oauth_client_used(conn, grant.client_id)
    for kind, token, seconds in (
        ("access", access, lifetimes.access_seconds),
        ("refresh", refresh_token, lifetimes.refresh_seconds),
    ):
        await oauth_queries.insert_oauth_token(
            conn,
            oauth_queries.NewToken(
                tenant_id=grant.tenant_id,
                token_hash=_hash(token),
                kind=kind,
                key_prefix=grant.key_prefix,
                client_id=grant.client_id,
                resource=grant.resource,
                scope=grant.scope,
                lifetime_seconds=seconds,
                family_id=grant.family_id,
            ),
        )
    return Tokens(access, refresh_token, int(lifetimes.access_seconds), grant.scope)


async def authenticate(db: Database, token: str, resource: str) -> Caller | None:
    """The caller of an access token for ``resource`` (its key's grants and tool set);
    None when unknown, expired, for another resource, or issued from a key that is
    revoked or expired now."""
    if not token.startswith(ACCESS_PREFIX) or len(token) > 200:
        return None
    async with db.admin_conn() as conn:
        row = await oauth_queries.access_token_for_auth(conn, _hash(token))
    if row is None or not row.usable or row.resource != resource:
        return None
    return Caller(
        tenant_id=TenantId(row.tenant_id),
        tenant_slug=row.tenant_slug,
        key_id=row.key_prefix,
        label=row.label,
        grants={agent: cast(Permission, level) for agent, level in row.grants.items()},
        tool_set=tenants.parse_tool_set(row.tool_set),
        credential=f"grant:{row.client_id}:{row.key_prefix}",
    )


async def revoke_token(db: Database, token: str, client_id: str) -> None:
    """End ``client_id``'s access or refresh token ``token`` (nothing when it is unknown or
    another client's); a refresh token takes the access tokens of its grant with it."""
    if len(token) > 200:
        return
    async with db.admin_tx() as conn:
        await oauth_queries.revoke_oauth_token(conn, _hash(token), client_id)


def redirect_uri_registered(client: Client, redirect_uri: str) -> bool:
    """Exact string match against the registered redirect URIs (OAuth 2.1)."""
    return redirect_uri in client.redirect_uris


def scope_text(scopes: Sequence[str]) -> str:
    return " ".join(scope for scope in scopes if scope)
