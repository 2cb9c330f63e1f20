"""The built-in server's audit trail and its consent throttle.

Registrations, refused token requests and wrong API keys pasted on the consent page each
leave one log line (never a secret: a key is named by its public KEY_ID prefix only).
Consent posts are throttled per client address and per key prefix
(``CPERSONA_OAUTH_CONSENT_ATTEMPTS_PER_HOUR``): a script cannot try 300 keys, nor try
one key's secret from many addresses. The CSRF cookie is ``__Host-`` over https.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import MutableMapping
from typing import Any

import httpx
from structlog.testing import capture_logs

from service.app.oauth import consent
from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.flows import CALLBACK, authorize_query, hidden_fields, pkce, register
from tests.support import Served, new_tenant, serve


def _events(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [line for line in logs if line["event"] == event]


async def _consent_form(http: httpx.AsyncClient, served: Served, client_id: str) -> dict[str, str]:
    _, challenge = pkce()
    query = authorize_query(served, client_id, challenge)
    page = await http.get(f"{served.base_url}/authorize", params=query)
    assert page.status_code == 200, page.text
    return hidden_fields(page.text)


async def _paste(
    http: httpx.AsyncClient, served: Served, form: dict[str, str], key: str
) -> httpx.Response:
    data = {**form, "api_key": key, "decision": "approve"}
    return await http.post(f"{served.base_url}/authorize", data=data)


def _wrong_key(prefix: str = "") -> str:
    prefix = prefix or f"cpk_{secrets.token_hex(6)}"
    return f"{prefix}_{secrets.token_urlsafe(32)}"


async def test_wrong_keys_on_the_consent_page_are_logged_and_throttled_per_address(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "audit")
    limited = dataclasses.replace(settings, oauth_consent_attempts_per_hour=3.0)
    wrong = [_wrong_key() for _ in range(3)]
    async with serve(limited, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        form = await _consent_form(http, served, client_id)
        with capture_logs() as logs:
            answers = [await _paste(http, served, form, attempt) for attempt in wrong]
            throttled = await _paste(http, served, form, key)  # even the right key waits
    assert [answer.status_code for answer in answers] == [401, 401, 401]
    assert throttled.status_code == 429
    assert 1 <= int(throttled.headers["retry-after"]) <= 1200
    assert "Too many attempts" in throttled.text
    refused = _events(logs, "oauth_consent_refused")
    assert [line["key_id"] for line in refused] == [attempt[:16] for attempt in wrong]
    assert {line["address"] for line in refused} == {"127.0.0.1"}
    assert {line["client_id"] for line in refused} == {client_id}
    assert _events(logs, "oauth_consent_throttled")[0]["address"] == "127.0.0.1"
    text = repr(logs)
    assert not any(attempt[16:] in text for attempt in [*wrong, key])


async def test_one_keys_prefix_is_throttled_across_addresses(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "prefix")
    limited = dataclasses.replace(settings, oauth_consent_attempts_per_hour=2.0)
    first = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address="127.0.0.1"))
    second = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2"))
    async with serve(limited, database_url, public=True) as served, first, second:
        client_id = (await register(first, served))["client_id"]
        form = await _consent_form(first, served, client_id)
        guesses = [await _paste(first, served, form, _wrong_key(key[:16])) for _ in range(2)]
        form = await _consent_form(second, served, client_id)
        same_prefix = await _paste(second, served, form, key)
        other_prefix = await _paste(second, served, form, _wrong_key())
    assert [guess.status_code for guess in guesses] == [401, 401]
    assert same_prefix.status_code == 429
    assert other_prefix.status_code == 401


async def test_a_pasted_secret_that_is_not_key_shaped_is_never_logged(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        form = await _consent_form(http, served, client_id)
        with capture_logs() as logs:
            answer = await _paste(http, served, form, "my-bank-password-hunter2")
    assert answer.status_code == 401
    assert [line["key_id"] for line in _events(logs, "oauth_consent_refused")] == [""]
    assert "hunter2" not in repr(logs)


async def test_registrations_and_refused_token_requests_are_logged_without_secrets(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        with capture_logs() as logs:
            client = await register(http, served, token_endpoint_auth_method="client_secret_post")
            bad = await http.post(
                f"{served.base_url}/register", json={"redirect_uris": ["javascript:alert(1)"]}
            )
            code = await http.post(
                f"{served.base_url}/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": client["client_id"],
                    "client_secret": client["client_secret"],
                    "code": "guessed-code",
                    "code_verifier": "v" * 43,
                    "redirect_uri": CALLBACK,
                },
            )
            wrong_secret = await http.post(
                f"{served.base_url}/token",
                data={
                    "grant_type": "refresh_token",
                    "client_id": client["client_id"],
                    "client_secret": "not-the-secret",
                    "refresh_token": "cpr_guess",
                },
            )
    assert (bad.status_code, code.status_code, wrong_secret.status_code) == (400, 400, 401)
    registered = _events(logs, "oauth_client_registered")
    assert [line["client_id"] for line in registered] == [client["client_id"]]
    assert registered[0]["redirect_uris"] == [CALLBACK]
    assert registered[0]["address"] == "127.0.0.1"
    assert _events(logs, "oauth_registration_refused")[0]["address"] == "127.0.0.1"
    refused = _events(logs, "oauth_token_refused")
    assert [(line["error"], line["grant_type"]) for line in refused] == [
        ("invalid_grant", "authorization_code"),
        ("invalid_client", "refresh_token"),
    ]
    assert {line["client_id"] for line in refused} == {client["client_id"]}
    text = repr(logs)
    for secret in (client["client_secret"], "guessed-code", "not-the-secret", "cpr_guess"):
        assert secret not in text


async def test_the_csrf_cookie_takes_the_host_prefix_over_https(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """CPERSONA_PUBLIC_URL says https (TLS ends at a proxy): the cookie is ``__Host-``
    (Secure, Path=/, no Domain), and the consent post that returns it is accepted."""
    key = await new_tenant(lib, "https")
    behind_tls = dataclasses.replace(settings, public_url="https://localhost")
    async with serve(behind_tls, database_url) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        _, challenge = pkce()
        query = {
            **authorize_query(served, client_id, challenge),
            "resource": "https://localhost/mcp",
        }
        page = await http.get(f"{served.base_url}/authorize", params=query)
        cookie = page.headers["set-cookie"]
        token = cookie.split(";", 1)[0].split("=", 1)[1]
        answer = await http.post(
            f"{served.base_url}/authorize",
            data={**hidden_fields(page.text), "api_key": key, "decision": "approve"},
            headers={"cookie": f"__Host-{consent.CSRF_COOKIE}={token}"},
        )
    assert cookie.startswith(f"__Host-{consent.CSRF_COOKIE}=")
    attributes = [part.strip().lower() for part in cookie.split(";")[1:]]
    assert "secure" in attributes
    assert "path=/" in attributes
    assert not any(part.startswith("domain") for part in attributes)
    assert answer.status_code == 302, answer.text
    assert httpx.URL(answer.headers["location"]).params["iss"] == "https://localhost"
