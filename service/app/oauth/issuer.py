"""Access tokens of an external identity provider: signed JWTs checked against its JWKS.

The issuer's metadata (RFC 8414 ``oauth-authorization-server``, else OpenID
``openid-configuration``) names its ``jwks_uri``; the key set is cached for
``cache_seconds`` and fetched again early when a token names a key id the cache does
not hold (the provider rotated its keys), at most once per ``refetch_seconds`` so a
stream of forged key ids cannot make this service hammer the provider. A token must be
signed with an asymmetric algorithm by a key of that set, of the algorithm's key type
(an ``ES256`` token naming an RSA key is rejected, not handed to a verifier that cannot
use it), and carry ``iss`` (the issuer), ``aud`` (this service's audience) and ``exp``;
``exp`` and ``nbf`` are checked. The
tenant comes from a claim; grants from another (absent: read-write on every agent, the
default of a new API key), and the tool set (``all`` or ``everyday``) from a third
(absent: ``all``, again a new key's default).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Final, cast
from urllib.parse import urlsplit

import httpx
import jwt

from service.app.oauth.refusals import TenantUnknown, TokenRejected
from service.db import tenants as tenants_queries
from service.db.pool import Database
from service.models import PERMISSIONS, TOOL_SETS, Caller, Permission, TenantId, ToolSet

ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384")
KEY_TYPES: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC"}
"""The JWK ``kty`` each algorithm family verifies with (RFC 7518)."""
LEEWAY_SECONDS: Final = 30
FETCH_TIMEOUT: Final = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class IssuerConfig:
    issuer: str
    audience: str
    tenant_claim: str
    grants_claim: str
    cache_seconds: float
    refetch_seconds: float
    tools_claim: str = "cpersona_tools"


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414 (well-known before the path) first,
    then OpenID Connect Discovery (after it)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


class IssuerKeys:
    """The issuer's signing keys, discovered from its metadata and cached with rotation."""

    def __init__(self, config: IssuerConfig) -> None:
        self._config = config
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at = -float("inf")
        self._jwks_uri: str | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def key(self, kid: str | None) -> jwt.PyJWK:
        """The key ``kid`` names (the only key when the token names none)."""
        now = time.monotonic()
        stale = now - self._fetched_at > self._config.cache_seconds
        if stale or (self._lookup(kid) is None and self._may_refetch(now)):
            async with self._lock:
                if self._fetched_at <= now:  # nobody refreshed while we waited
                    await self._refresh()
        found = self._lookup(kid)
        if found is None:
            raise TokenRejected("the token's signing key is not in the issuer's key set")
        return found

    def _lookup(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _may_refetch(self, now: float) -> bool:
        return now - self._fetched_at >= self._config.refetch_seconds

    async def _refresh(self) -> None:
        try:
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT) as http:
                if self._jwks_uri is None:
                    self._jwks_uri = await self._discover(http)
                reply = await http.get(self._jwks_uri)
                reply.raise_for_status()
                key_set = jwt.PyJWKSet.from_dict(reply.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as error:
            self._fetched_at = time.monotonic()  # back off for refetch_seconds
            raise TokenRejected(f"the issuer's keys could not be fetched: {error}") from None
        self.fetches += 1
        self._keys = {str(key.key_id): key for key in key_set.keys if key.key_id is not None}
        if not self._keys and len(key_set.keys) == 1:
            self._keys = {"": key_set.keys[0]}
        self._fetched_at = time.monotonic()

    async def _discover(self, http: httpx.AsyncClient) -> str:
        for url in metadata_urls(self._config.issuer):
            reply = await http.get(url)
            if reply.status_code != 200:
                continue
            document = reply.json()
            if document.get("issuer") != self._config.issuer:
                raise ValueError(f"metadata at {url} names issuer {document.get('issuer')!r}")
            return str(document["jwks_uri"])
        raise ValueError(f"no authorization server metadata for {self._config.issuer}")


class IssuerVerifier:
    """Checks an external access token and maps it to a caller of this service."""

    def __init__(self, config: IssuerConfig) -> None:
        self.config = config
        self.keys = IssuerKeys(config)

    async def claims(self, token: str) -> dict[str, Any]:
        """The verified claims; TokenRejected saying why otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise TokenRejected(f"signing algorithm {algorithm!r} is not accepted")
        key = await self.keys.key(header.get("kid"))
        if key.key_type != KEY_TYPES[str(algorithm)[:2]]:
            raise TokenRejected(f"the token's key is a {key.key_type} key, not one for {algorithm}")
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=[str(algorithm)],
                audience=self.config.audience,
                issuer=self.config.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except (jwt.PyJWTError, TypeError, ValueError) as error:  # a key unfit for the token
            raise TokenRejected(str(error)) from None

    async def authenticate(self, db: Database, token: str) -> Caller:
        """The caller a valid token maps to; TokenRejected or TenantUnknown otherwise."""
        claims = await self.claims(token)
        slug = claims.get(self.config.tenant_claim)
        if not isinstance(slug, str) or not slug:
            raise TenantUnknown(
                f"the token has no {self.config.tenant_claim!r} claim naming a tenant"
            )
        async with db.admin_conn() as conn:
            tenant = await tenants_queries.tenant_by_slug(conn, slug)
        if tenant is None:
            raise TenantUnknown(f"the token's tenant {slug!r} does not exist on this service")
        subject = str(claims.get("sub", ""))
        return Caller(
            tenant_id=TenantId(tenant.id),
            tenant_slug=tenant.slug,
            key_id=f"oauth:{subject}"[:80],
            label=str(claims.get("client_id") or claims.get("azp") or subject)[:200],
            grants=self._grants(claims),
            tool_set=self._tool_set(claims),
            credential=f"oauth:{subject}",
        )

    def _tool_set(self, claims: dict[str, Any]) -> ToolSet:
        raw = claims.get(self.config.tools_claim, "all")
        for tool_set in TOOL_SETS:
            if raw == tool_set:
                return tool_set
        raise TenantUnknown(
            f"the token's {self.config.tools_claim!r} claim must be one of {', '.join(TOOL_SETS)}"
        )

    def _grants(self, claims: dict[str, Any]) -> dict[str, Permission]:
        raw = claims.get(self.config.grants_claim)
        if raw is None:
            return {"*": "read-write"}
        valid = isinstance(raw, dict) and all(
            isinstance(agent, str) and level in PERMISSIONS for agent, level in raw.items()
        )
        if not valid:
            raise TenantUnknown(
                f"the token's {self.config.grants_claim!r} claim must map agent ids to "
                "none, read or read-write"
            )
        return {agent: cast(Permission, level) for agent, level in raw.items()}
