"""The bearer credential of a request: an API key, a built-in OAuth token or an external JWT.

:class:`BearerAuth` is what the edge asks who is calling. An API key (``cpk_...``)
resolves exactly as it always has; any other bearer is an OAuth access token of the
mode in force (``CPERSONA_OAUTH_ISSUER`` / ``CPERSONA_PUBLIC_URL``). A refusal is a
:class:`Denial`: 401 with ``WWW-Authenticate: Bearer resource_metadata="..."`` (plus
``error="invalid_token"`` when a credential was presented) so an OAuth client can
discover how to get a token, or 403 when a valid token names no tenant of this service
(no ``insufficient_scope``: no other scope would help).
"""

from __future__ import annotations

import dataclasses

from starlette.types import Scope

from service.app.oauth import server
from service.app.oauth.issuer import IssuerConfig, IssuerVerifier
from service.app.oauth.refusals import TenantUnknown, TokenRejected
from service.logs import get_logger, throttled
from service.memory import tenants
from service.memory.library import Library
from service.models import Caller, JsonObject

log = get_logger("service.oauth")
PRM_PATH = "/.well-known/oauth-protected-resource"


@dataclasses.dataclass(frozen=True)
class Denial:
    """Why a request gets no caller: its status, body and the challenge's error."""

    status: int
    body: JsonObject
    invalid_token: bool = False


MISSING = Denial(401, {"error": "unauthorized"})
INVALID = Denial(401, {"error": "unauthorized"}, invalid_token=True)


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def request_base(scope: Scope, public_base: str) -> str:
    """The origin clients reach this service at: CPERSONA_PUBLIC_URL, else the request's."""
    if public_base:
        return public_base
    host = header(scope, b"host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


def bearer_credential(scope: Scope) -> str | None:
    """The credential of ``Authorization: Bearer <credential>`` (scheme case-insensitive)."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, credential = value.partition(" ")
    if scheme.lower() == "bearer" and credential.strip():
        return credential.strip()
    return None


def issuer_verifier(lib: Library) -> IssuerVerifier | None:
    """The external issuer's verifier, when CPERSONA_OAUTH_ISSUER is set."""
    settings = lib.settings
    if settings.oauth_mode != "external":
        return None
    return IssuerVerifier(
        IssuerConfig(
            issuer=settings.oauth_issuer,
            audience=settings.oauth_token_audience,
            tenant_claim=settings.oauth_tenant_claim,
            grants_claim=settings.oauth_grants_claim,
            tools_claim=settings.oauth_tools_claim,
            cache_seconds=settings.oauth_jwks_cache_seconds,
            refetch_seconds=settings.oauth_jwks_refetch_seconds,
        )
    )


class BearerAuth:
    """Resolves a request's credential to its caller, or to the answer that refuses it."""

    def __init__(self, lib: Library, anonymous: Caller | None) -> None:
        self._lib, self._anonymous = lib, anonymous
        self.verifier = issuer_verifier(lib)

    async def resolve(self, scope: Scope) -> Caller | Denial:
        credential = bearer_credential(scope)
        if credential is None:
            return self._anonymous or MISSING
        if credential.startswith(tenants.KEY_SCHEME + "_"):
            caller = await tenants.authenticate(self._lib.db, credential)
            return caller or INVALID
        try:
            return await self._oauth_caller(scope, credential) or INVALID
        except TokenRejected as reason:
            if (suppressed := throttled("token_rejected", str(reason)[:60])) is not None:
                log.info("token_rejected", reason=str(reason), suppressed=suppressed)
            return INVALID
        except TenantUnknown as reason:
            return Denial(403, {"error": "unknown_tenant", "message": str(reason)})

    async def _oauth_caller(self, scope: Scope, token: str) -> Caller | None:
        if self.verifier is not None:
            return await self.verifier.authenticate(self._lib.db, token)
        if self._lib.settings.oauth_mode == "builtin":
            resource = f"{self._lib.settings.oauth_public_base}/mcp"
            return await server.authenticate(self._lib.db, token, resource)
        return None

    def challenge(self, scope: Scope, denial: Denial) -> dict[str, str]:
        """The headers of a denial: the RFC 9728 challenge on a 401."""
        if denial.status != 401:
            return {}
        base = request_base(scope, self._lib.settings.oauth_public_base)
        value = f'Bearer resource_metadata="{base}{PRM_PATH}/mcp"'
        if denial.invalid_token:
            value += ', error="invalid_token", error_description="the bearer credential is invalid"'
        return {"www-authenticate": value}
