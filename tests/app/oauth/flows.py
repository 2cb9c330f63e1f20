"""The official SDK's OAuth client (``mcp.client.auth``) against the built-in server.

:class:`OAuthSession` wires ``OAuthClientProvider`` to an in-memory token store and to
a *consent driver*: the SDK hands it the authorization URL (as it would open a browser),
the driver plays the person on the consent page and returns the code from the redirect
to the client's redirect URI. :class:`FormConsent` does that with plain HTTP (httpx2,
no redirects followed); ``tests/app/oauth/browser.py`` does it with headless Chromium.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import html
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.support import Served, body

CALLBACK = "http://127.0.0.1:9/oauth/callback"
"""A redirect URI nobody listens on: the drivers read the code from the redirect itself."""


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def code_from_redirect(location: str) -> AuthorizationCodeResult:
    query = parse_qs(urlsplit(location).query)
    assert "code" in query, f"no code in the redirect: {location}"
    return AuthorizationCodeResult(
        code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
    )


def hidden_fields(page: str) -> dict[str, str]:
    pairs = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page)
    return {html.unescape(name): html.unescape(value) for name, value in pairs}


class FormConsent:
    """Plays the person over plain HTTP: opens the consent page, pastes the key, approves."""

    def __init__(self, api_key: str) -> None:
        self.api_key = api_key
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            form = {**hidden_fields(page.text), "api_key": self.api_key, "decision": "approve"}
            target = authorization_url.split("?", 1)[0]
            answer = await http.post(target, data=form)
            assert answer.status_code == 302, answer.text
            self.result = code_from_redirect(answer.headers["location"])

    async def code(self) -> AuthorizationCodeResult:
        assert self.result is not None, "the consent page was never completed"
        return self.result


class OAuthSession:
    """One OAuth client (its registration and tokens persist across :meth:`client`)."""

    def __init__(
        self,
        served: Served,
        open_url: Callable[[str], Awaitable[None]],
        code: Callable[[], Awaitable[AuthorizationCodeResult]],
        redirect_uri: str = CALLBACK,
    ) -> None:
        self.storage = MemoryStorage()
        self.requests: list[str] = []
        self.auth = OAuthClientProvider(
            server_url=served.mcp_url,
            client_metadata=OAuthClientMetadata.model_validate(
                {
                    "client_name": "pytest connector",
                    "redirect_uris": [redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "token_endpoint_auth_method": "none",
                }
            ),
            storage=self.storage,
            redirect_handler=open_url,
            callback_handler=code,
        )
        self.served = served

    async def _log(self, request: httpx2.Request) -> None:
        self.requests.append(f"{request.method} {request.url.path}")

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(
                auth=self.auth, timeout=30, event_hooks={"request": [self._log]}
            ) as http,
            Client(streamable_http_client(self.served.mcp_url, http_client=http)) as client,
        ):
            yield client

    async def call(self, tool: str, **arguments: Any) -> Any:
        async with self.client() as client:
            result = await client.call_tool(tool, arguments)
        assert not result.is_error, result
        return body(result)

    @property
    def access_token(self) -> str:
        assert self.storage.tokens is not None
        return self.storage.tokens.access_token


def pkce() -> tuple[str, str]:
    """A PKCE (verifier, S256 challenge) pair."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


async def register(http: httpx.AsyncClient, served: Served, **extra: Any) -> dict[str, Any]:
    """Register a public client (``extra`` overrides the metadata); its registration."""
    metadata = {
        "client_name": "test client",
        "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
        **extra,
    }
    answer = await http.post(f"{served.base_url}/register", json=metadata)
    assert answer.status_code == 201, answer.text
    registered: dict[str, Any] = answer.json()
    return registered


def authorize_query(served: Served, client_id: str, challenge: str) -> dict[str, str]:
    """The query of a valid authorization request of ``client_id`` to CALLBACK."""
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        "resource": served.mcp_url,
    }


async def approve(http: httpx.AsyncClient, served: Served, client_id: str, key: str) -> Grant:
    """Run /authorize by hand (the page, then the post with ``key``) and redeem the code."""
    verifier, challenge = pkce()
    url = f"{served.base_url}/authorize"
    page = await http.get(url, params=authorize_query(served, client_id, challenge))
    assert page.status_code == 200, page.text
    answer = await http.post(
        url, data={**hidden_fields(page.text), "api_key": key, "decision": "approve"}
    )
    assert answer.status_code == 302, answer.text
    code = code_from_redirect(answer.headers["location"]).code
    form = {"grant_type": "authorization_code", "client_id": client_id, "code": code,
            "redirect_uri": CALLBACK, "code_verifier": verifier}  # fmt: skip
    tokens = await http.post(f"{served.base_url}/token", data=form)
    assert tokens.status_code == 200, tokens.text
    return Grant(form, tokens.json()["access_token"], tokens.json()["refresh_token"])


@dataclasses.dataclass(frozen=True)
class Grant:
    """A redeemed code: the token request that redeemed it and the tokens it got."""

    redemption: dict[str, str]
    access_token: str
    refresh_token: str
