"""``/token`` (authorization_code and refresh_token grants), ``/revoke`` (RFC 7009) and
``/register`` (RFC 7591).

Errors are RFC 6749 JSON (``{"error", "error_description"}``, 400, or 401 for a client
that fails authentication); every answer is ``Cache-Control: no-store``. A client
authenticates with its secret (``client_secret_basic`` or ``client_secret_post``) or,
as a public client, with its ``client_id`` alone (PKCE protects its codes).

``/register`` takes no credential, so each client address may register at most
``CPERSONA_OAUTH_REGISTRATIONS_PER_HOUR`` clients an hour per process, and all addresses
together ``CPERSONA_OAUTH_REGISTRATIONS_TOTAL_PER_HOUR`` (429 beyond either, with
``Retry-After``): a stranger cannot fill the clients table at wire speed, even rotating
addresses. The client address is the TCP peer's, or the one a configured proxy
(``FORWARDED_ALLOW_IPS``) forwards: the server rewrites it before the application sees
it (:mod:`service.cli.connections`). Clients never issued a token expire
(``CPERSONA_OAUTH_UNUSED_CLIENT_HOURS``, :func:`service.app.background.oauth_client_sweeper`).

Registrations (and refused ones) and refused token and revocation requests each leave
one audit line without a secret (``audit.py``); redirect URIs are checked by
``redirects.py``.
"""

from __future__ import annotations

import base64
import binascii
import math
import time
from typing import Any, Final
from urllib.parse import unquote

from mcp.shared.auth import OAuthClientMetadata
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from service.app.admission import RateBuckets
from service.app.oauth import audit, forms, server
from service.app.oauth.authorize import same_resource
from service.app.oauth.redirects import MAX_URIS, redirect_uri_problem
from service.app.oauth.refusals import OAuthRefusal, RegistrationsFull
from service.memory.library import Library

NO_STORE: Final = {"cache-control": "no-store", "pragma": "no-cache"}
AUTH_METHODS: Final = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES: Final = frozenset({"authorization_code", "refresh_token"})


def refusal(error: str, description: str, status: int = 400) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status, NO_STORE)


def basic_credentials(request: Request) -> tuple[str, str] | None:
    value = request.headers.get("authorization", "")
    if not value.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(value[6:], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    client_id, sep, secret = decoded.partition(":")
    return (unquote(client_id), unquote(secret)) if sep else None


async def authenticated_client(
    lib: Library, request: Request, form: dict[str, str]
) -> server.Client | None:
    """The client a token or revocation request authenticates as (its secret by HTTP
    Basic or in the form, or a public client's id alone); None when it fails."""
    basic = basic_credentials(request)
    client_id = basic[0] if basic else form.get("client_id", "")
    client = await server.find_client(lib.db, client_id)
    secret = basic[1] if basic else form.get("client_secret")
    if client is None or not client.secret_matches(secret):
        return None
    return client


async def client_request(
    lib: Library, request: Request
) -> tuple[dict[str, str], server.Client] | Response:
    """The form of a request a client authenticates (``/token``, ``/revoke``) and the
    client, or the answer refusing it (unreadable form: 400/413, failed client: 401)."""
    try:
        form = await forms.form_fields(request)
    except forms.Unreadable as unreadable:
        return unreadable.response
    client = await authenticated_client(lib, request, form)
    if client is None:
        refused = OAuthRefusal("invalid_client", "unknown client or wrong client secret")
        audit.token_refused(request, refused, form)
        return refusal(refused.error, refused.description, 401)
    return form, client


class TokenEndpoint:
    def __init__(self, lib: Library) -> None:
        self._lib = lib
        settings = lib.settings
        self.resource = f"{settings.oauth_public_base}/mcp"
        self.lifetimes = server.Lifetimes(
            access_seconds=settings.oauth_access_token_seconds,
            refresh_seconds=settings.oauth_refresh_token_days * 86_400,
        )

    async def handle(self, request: Request) -> Response:
        authenticated = await client_request(self._lib, request)
        if isinstance(authenticated, Response):
            return authenticated
        form, client = authenticated
        try:
            tokens = await self._grant(form, client)
        except OAuthRefusal as refused:
            audit.token_refused(request, refused, {**form, "client_id": client.client_id})
            return refusal(refused.error, refused.description)
        body: dict[str, Any] = {
            "access_token": tokens.access_token,
            "token_type": "Bearer",
            "expires_in": tokens.expires_in,
            "refresh_token": tokens.refresh_token,
        }
        if tokens.scope:
            body["scope"] = tokens.scope
        return JSONResponse(body, 200, NO_STORE)

    async def _grant(self, form: dict[str, str], client: server.Client) -> server.Tokens:
        """The tokens of a token request of ``client``; OAuthRefusal saying why not."""
        grant_type, client_id = form.get("grant_type", ""), client.client_id
        if grant_type not in GRANT_TYPES or grant_type not in client.grant_types:
            raise OAuthRefusal("unsupported_grant_type", "use authorization_code or refresh_token")
        resource = form.get("resource")
        if resource is not None and not same_resource(resource, self.resource):
            raise OAuthRefusal("invalid_target", f"this server's resource is {self.resource}")
        if grant_type == "refresh_token":
            token = form.get("refresh_token", "")
            return await server.refresh(self._lib.db, token, client_id, None, self.lifetimes)
        if not form.get("code") or not form.get("code_verifier"):
            raise OAuthRefusal("invalid_request", "code and code_verifier are required")
        exchange = server.CodeExchange(
            code=form["code"],
            client_id=client_id,
            redirect_uri=form.get("redirect_uri"),
            code_verifier=form["code_verifier"],
            resource=None,
        )
        return await server.redeem_code(self._lib.db, exchange, self.lifetimes)


def registration_problem(raw: Any, metadata: OAuthClientMetadata) -> str | None:
    uris = raw.get("redirect_uris") if isinstance(raw, dict) else None
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        return "redirect_uris must be a list of URIs"
    if not 1 <= len(uris) <= MAX_URIS:
        return f"redirect_uris must list 1 to {MAX_URIS} URIs"
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem is not None:
            return problem
    if (metadata.token_endpoint_auth_method or "client_secret_basic") not in AUTH_METHODS:
        return f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}"
    if "authorization_code" not in metadata.grant_types:
        return "grant_types must include authorization_code"
    if not set(metadata.grant_types) <= GRANT_TYPES:
        return "grant_types may only be authorization_code and refresh_token"
    if "code" not in metadata.response_types:
        return "response_types must include code"
    return None


class RevokeEndpoint:
    """RFC 7009: a client ends one of its tokens. The answer is 200 whether or not the
    token existed (or belonged to another client, which is left alone), so the endpoint
    tells nobody which tokens exist. Revoking a refresh token also ends the access tokens
    issued to the same client from the same API key (RFC 7009 section 2.1: the tokens
    of the same grant); revoking an access token leaves its refresh token."""

    def __init__(self, lib: Library) -> None:
        self._lib = lib

    async def handle(self, request: Request) -> Response:
        authenticated = await client_request(self._lib, request)
        if isinstance(authenticated, Response):
            return authenticated
        form, client = authenticated
        token = form.get("token", "")
        if not token:
            return refusal("invalid_request", "token is required")
        await server.revoke_token(self._lib.db, token, client.client_id)
        return Response(status_code=200, headers=NO_STORE)


def too_many(what: str, wait: float) -> Response:
    """429 ``temporarily_unavailable`` saying ``what``, with Retry-After of ``wait``."""
    seconds = max(1, math.ceil(wait))
    refused = refusal("temporarily_unavailable", f"{what}; retry in {seconds} s", 429)
    refused.headers["retry-after"] = str(seconds)
    return refused


class RegisterEndpoint:
    def __init__(self, lib: Library) -> None:
        self._lib = lib
        per_hour = lib.settings.oauth_registrations_per_hour
        self._registrations = RateBuckets(per_hour / 3600, per_hour)
        self._total_per_hour = lib.settings.oauth_registrations_total_per_hour

    def throttled(self, request: Request) -> Response | None:
        """The 429 of an address over its registrations per hour, else None (one spent)."""
        address = request.client.host if request.client else ""
        wait = self._registrations.take(address)
        if not wait:
            return None
        return too_many("too many client registrations from this address", wait)

    async def handle(self, request: Request) -> Response:
        throttled = self.throttled(request)
        if throttled is not None:
            return throttled
        try:
            raw = forms.json_document(await forms.small_body(request))
            metadata = OAuthClientMetadata.model_validate(raw)
        except forms.Unreadable as unreadable:
            return unreadable.response
        except (ValueError, ValidationError) as error:
            message = f"not valid client metadata: {str(error).splitlines()[0]}"
            audit.registration_refused(request, message)
            return refusal("invalid_client_metadata", message)
        problem = registration_problem(raw, metadata)
        if problem is not None:
            audit.registration_refused(request, problem)
            return refusal("invalid_client_metadata", problem)
        document = metadata.model_dump(mode="json", exclude_none=True)
        method = metadata.token_endpoint_auth_method or "client_secret_basic"
        document.update(redirect_uris=raw["redirect_uris"], token_endpoint_auth_method=method)
        try:
            client_id, secret = await server.register_client(
                self._lib.db, document, method != "none", self._total_per_hour
            )
        except RegistrationsFull as full:
            audit.registration_refused(request, f"overall cap reached ({full})")
            return too_many(f"too many client registrations ({full})", full.retry_after)
        audit.registered(request, client_id, document)
        answer = {**document, "client_id": client_id, "client_id_issued_at": int(time.time())}
        if secret is not None:
            answer.update(client_secret=secret, client_secret_expires_at=0)
        return JSONResponse(answer, 201, NO_STORE)
