"""Token families: a replayed refresh token or authorization code ends the whole grant.

Every code redeemed starts a family; each refresh rotates the family's refresh token and
keeps the rotated one's hash. Presenting a rotated refresh token again (a thief racing
the real client, or the other way round) or replaying a redeemed code revokes every
token of the family, access tokens included, and logs it without the secret: the
client must send the person through the consent page again (OAuth 2.1 section 4.3.1,
RFC 9700 section 4.14.2). Driven over HTTP as a connector and a thief would.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import httpx
from structlog.testing import capture_logs

from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.flows import Grant, approve, register
from tests.support import Served, new_tenant, serve

JSON_HEADERS = {"accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def _ping(http: httpx.AsyncClient, served: Served, token: str) -> int:
    headers = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
    return (await http.post(served.mcp_url, json=PING, headers=headers)).status_code


async def _refresh(
    http: httpx.AsyncClient, served: Served, client_id: str, token: str
) -> httpx.Response:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
    return await http.post(f"{served.base_url}/token", data=form)


def _secrets_absent(logs: list[MutableMapping[str, Any]], *secrets: str) -> bool:
    text = repr(logs)
    return not any(secret in text for secret in secrets)


async def test_reusing_a_rotated_refresh_token_revokes_every_token_of_its_family(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "family")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        first = await approve(http, served, client_id, key)
        other = await approve(http, served, client_id, key)  # another grant: left alone
        rotated = await _refresh(http, served, client_id, first.refresh_token)
        second = rotated.json()
        with capture_logs() as logs:
            stolen = await _refresh(http, served, client_id, first.refresh_token)
        pings = [await _ping(http, served, t) for t in (first.access_token, second["access_token"])]
        legitimate = await _refresh(http, served, client_id, second["refresh_token"])
        other_ping = await _ping(http, served, other.access_token)
    assert rotated.status_code == 200, rotated.text
    assert (stolen.status_code, stolen.json()["error"]) == (400, "invalid_grant")
    assert pings == [401, 401]  # the access tokens of the family are gone too
    assert (legitimate.status_code, legitimate.json()["error"]) == (400, "invalid_grant")
    assert other_ping == 200
    replayed = [line for line in logs if line["event"] == "oauth_grant_replayed"]
    assert len(replayed) == 1
    assert replayed[0]["grant"] == "refresh_token"
    assert replayed[0]["client_id"] == client_id
    assert replayed[0]["key_id"] == key[:16]
    assert replayed[0]["tokens_revoked"] == 4  # both pairs, the rotated refresh token too
    assert replayed[0]["log_level"] == "warning"
    assert _secrets_absent(logs, first.refresh_token, second["refresh_token"], key)


async def test_replaying_a_redeemed_code_revokes_the_tokens_issued_from_it(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "code-replay")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        grant: Grant = await approve(http, served, client_id, key)
        refreshed = (await _refresh(http, served, client_id, grant.refresh_token)).json()
        with capture_logs() as logs:
            replay = await http.post(f"{served.base_url}/token", data=grant.redemption)
        pings = [
            await _ping(http, served, t) for t in (grant.access_token, refreshed["access_token"])
        ]
        refresh = await _refresh(http, served, client_id, refreshed["refresh_token"])
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    assert pings == [401, 401]  # every generation issued from that code
    assert (refresh.status_code, refresh.json()["error"]) == (400, "invalid_grant")
    replayed = [line for line in logs if line["event"] == "oauth_grant_replayed"]
    assert [(line["grant"], line["tokens_revoked"]) for line in replayed] == [
        ("authorization_code", 4)
    ]
    assert _secrets_absent(logs, grant.redemption["code"], grant.redemption["code_verifier"])


async def test_a_refresh_token_presented_twice_at_once_leaves_no_live_token(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """Two exchanges of one refresh token racing: at most one wins, and the loser's
    replay revokes what the winner got, so the two holders never both keep a chain."""
    key = await new_tenant(lib, "race")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client_id = (await register(http, served))["client_id"]
        grant = await approve(http, served, client_id, key)
        answers = await asyncio.gather(
            *(_refresh(http, served, client_id, grant.refresh_token) for _ in range(2))
        )
        won = [answer.json() for answer in answers if answer.status_code == 200]
        pings = [await _ping(http, served, token["access_token"]) for token in won]
    assert sorted(answer.status_code for answer in answers) == [200, 400]
    assert pings == [401]
