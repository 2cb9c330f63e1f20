"""Token revocation (RFC 7009) and the registration throttle of the built-in server.

Tokens come from the official SDK's OAuth client run through the consent page
(``tests/app/oauth/flows.py``); revocation and registration are plain HTTP, as a
connector's "disconnect" button or a stranger's script would send them.
"""

from __future__ import annotations

import dataclasses

import httpx

from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.flows import CALLBACK, FormConsent, OAuthSession
from tests.support import Served, new_tenant, serve

JSON_HEADERS = {"accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def _connected(served: Served, key: str) -> tuple[str, str, str]:
    """(client_id, access token, refresh token) of a connector the person approved."""
    consent = FormConsent(key)
    session = OAuthSession(served, consent.open, consent.code)
    await session.call("list_memories", agent_id="a")
    tokens, client = session.storage.tokens, session.storage.client
    assert tokens is not None
    assert tokens.refresh_token is not None
    assert client is not None
    assert client.client_id is not None
    return client.client_id, tokens.access_token, tokens.refresh_token


async def _ping(http: httpx.AsyncClient, served: Served, token: str) -> int:
    headers = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
    return (await http.post(served.mcp_url, json=PING, headers=headers)).status_code


async def _refresh(http: httpx.AsyncClient, served: Served, client_id: str, token: str) -> int:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
    return (await http.post(f"{served.base_url}/token", data=form)).status_code


async def _revoke(http: httpx.AsyncClient, served: Served, **form: str) -> httpx.Response:
    return await http.post(f"{served.base_url}/revoke", data=form)


async def test_a_revoked_access_token_is_refused_and_its_refresh_token_still_works(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "revoke-access")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id, access, refresh = await _connected(served, key)
        assert await _ping(http, served, access) == 200
        revoked = await _revoke(
            http, served, token=access, token_type_hint="access_token", client_id=client_id
        )
        after = await _ping(http, served, access)
        refreshed = await _refresh(http, served, client_id, refresh)
    assert revoked.status_code == 200
    assert revoked.headers["cache-control"] == "no-store"
    assert after == 401
    assert refreshed == 200


async def test_a_revoked_refresh_token_takes_the_access_tokens_of_its_grant_with_it(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "revoke-refresh")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id, access, refresh = await _connected(served, key)
        revoked = await _revoke(http, served, token=refresh, client_id=client_id)
        ping = await _ping(http, served, access)
        refreshed = await _refresh(http, served, client_id, refresh)
    assert revoked.status_code == 200
    assert ping == 401
    assert refreshed == 400


async def test_a_client_cannot_revoke_another_clients_token_nor_learn_that_it_exists(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "revoke-other")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        _, access, _ = await _connected(served, key)
        other = await http.post(
            f"{served.base_url}/register",
            json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
        )
        other_id = other.json()["client_id"]
        foreign = await _revoke(http, served, token=access, client_id=other_id)
        unknown = await _revoke(http, served, token="cpo_nonsense", client_id=other_id)
        still = await _ping(http, served, access)
    assert (foreign.status_code, unknown.status_code) == (200, 200)
    assert foreign.content == unknown.content == b""
    assert still == 200


async def test_revocation_needs_the_clients_credentials_and_a_token(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        registered = await http.post(
            f"{served.base_url}/register",
            json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "client_secret_post"},
        )
        client_id = registered.json()["client_id"]
        wrong = await _revoke(http, served, token="x", client_id=client_id, client_secret="no")
        nobody = await _revoke(http, served, token="x", client_id="nobody")
        empty = await _revoke(
            http, served, client_id=client_id, client_secret=registered.json()["client_secret"]
        )
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")
    assert (nobody.status_code, nobody.json()["error"]) == (401, "invalid_client")
    assert (empty.status_code, empty.json()["error"]) == (400, "invalid_request")


async def test_registrations_beyond_the_hourly_allowance_of_an_address_get_429(
    settings: Settings, database_url: str
) -> None:
    throttled = dataclasses.replace(settings, oauth_registrations_per_hour=2.0)
    metadata = {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
    async with serve(throttled, database_url, public=True) as served, httpx.AsyncClient() as http:
        answers = [await http.post(f"{served.base_url}/register", json=metadata) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [201, 201, 429]
    refused = answers[2]
    assert refused.json()["error"] == "temporarily_unavailable"
    assert 1 <= int(refused.headers["retry-after"]) <= 1800
    assert refused.headers["cache-control"] == "no-store"
