"""Signing in to the console through the built-in OAuth authorization server
(docs/console.md, "Tour"), when it runs (``CPERSONA_PUBLIC_URL`` set, no external
issuer).

The console is a public client of its own server (registered once per process, redirect
URI ``<public URL>/console/oauth/callback``), using the authorization code grant with PKCE
(S256) exactly as an MCP client does:

1. ``GET /console/sign-in/oauth`` draws a PKCE verifier and a ``state``, keeps both in a
   short-lived cookie (HttpOnly, SameSite=Strict, ``__Host-`` over https) and sends the
   browser to ``/authorize``.
2. The person pastes an API key on the consent page (its CSRF check, its throttle, its
   audit log) and approves; the server sends the browser back with a code.
3. ``GET /console/oauth/callback`` checks the ``state`` against the cookie (constant
   time), redeems the code with the verifier, reads the token's caller (the key's grants
   and tool set, as on ``/mcp``), revokes the tokens (the console keeps none: its session
   is the credential from here) and opens a session of that key, as pasting it would.

So the session is the key's: revoking the key ends it on every replica, as for a pasted
key. Anything else (no cookie, another state, a denied consent, a used or foreign code)
shows the sign-in form with a 400 and opens nothing.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from typing import Final
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from service.app.console import security
from service.app.console.auth import Gate
from service.app.oauth import audit, server
from service.app.oauth.refusals import OAuthRefusal
from service.logs import get_logger
from service.memory.library import Library

log = get_logger("service.console")
STATE_COOKIE: Final = "cpersona_console_oauth"
STATE_SECONDS: Final = 600
"""How long a started OAuth sign-in may take (the consent page's time)."""
CALLBACK: Final = "/oauth/callback"
CLIENT_NAME: Final = "CPersona console"
MAX_FIELD_CHARS: Final = 200
"""A code or state longer than this is no code or state of ours."""


class OAuthSignIn:
    """The two routes of the OAuth sign-in of one application."""

    def __init__(self, lib: Library, gate: Gate) -> None:
        settings = lib.settings
        self._lib = lib
        self._gate = gate
        self._base = settings.oauth_public_base
        self._resource = f"{self._base}/mcp"
        self._redirect_uri = f"{self._base}{security.PREFIX}{CALLBACK}"
        self._lifetimes = server.Lifetimes(
            access_seconds=settings.oauth_access_token_seconds,
            refresh_seconds=settings.oauth_refresh_token_days * 86_400,
        )
        self._client_id: str | None = None
        self._registering = asyncio.Lock()

    async def _client(self) -> str:
        """The console's client id, registered at the first OAuth sign-in of the process."""
        async with self._registering:
            if self._client_id is None:
                metadata = {
                    "client_name": CLIENT_NAME,
                    "redirect_uris": [self._redirect_uri],
                    "grant_types": ["authorization_code"],
                    "token_endpoint_auth_method": "none",
                }
                self._client_id, _ = await server.register_client(self._lib.db, metadata, False)
            return self._client_id

    async def start(self, request: Request) -> Response:
        """Send the browser to the consent page, the sign-in's state kept in a cookie."""
        client_id = await self._client()
        verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(24)
        query = urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": self._redirect_uri,
                "code_challenge": server.s256(verifier),
                "code_challenge_method": "S256",
                "state": state,
                "resource": self._resource,
            }
        )
        response = RedirectResponse(f"{self._base}/authorize?{query}", 303, security.HEADERS)
        secure = self._gate.secure(request)
        value = f"{state}.{verifier}"
        security.set_cookie(response, STATE_COOKIE, value, secure=secure, max_age=STATE_SECONDS)
        return response

    async def callback(self, request: Request) -> Response:
        """Back from the consent page: check the state, redeem the code, open a session."""
        secure = self._gate.secure(request)
        kept = request.cookies.get(security.cookie_name(STATE_COOKIE, secure), "")
        state, _, verifier = kept.partition(".")
        params = request.query_params
        given, code = params.get("state", ""), params.get("code", "")
        if not (state and verifier and _same(state, given)) or not code or params.get("error"):
            return self._refused(request, secure, "the sign-in was not finished or not ours")
        if len(code) > MAX_FIELD_CHARS or self._client_id is None:
            return self._refused(request, secure, "the authorization code is not ours")
        exchange = server.CodeExchange(
            code, self._client_id, self._redirect_uri, verifier, self._resource
        )
        try:
            tokens = await server.redeem_code(self._lib.db, exchange, self._lifetimes)
        except OAuthRefusal as refusal:
            return self._refused(request, secure, refusal.description)
        caller = await server.authenticate(self._lib.db, tokens.access_token, self._resource)
        await server.revoke_token(self._lib.db, tokens.refresh_token, self._client_id)
        if caller is None:
            return self._refused(request, secure, "the key was revoked meanwhile")
        response = await self._gate.open_session(request, caller, secure)
        security.clear_cookie(response, STATE_COOKIE, secure=secure)
        return response

    def _refused(self, request: Request, secure: bool, why: str) -> Response:
        log.info("console_oauth_refused", reason=why, address=audit.address(request))
        response = self._gate.form(request, f"OAuth sign-in failed ({why}); sign in again.", 400)
        security.clear_cookie(response, STATE_COOKIE, secure=secure)
        return response


def _same(kept: str, given: str) -> bool:
    """Whether the callback's state is the one this browser's sign-in drew (constant time)."""
    return len(given) <= MAX_FIELD_CHARS and hmac.compare_digest(kept.encode(), given.encode())
