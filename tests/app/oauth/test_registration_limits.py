"""Who ``/register`` throttles, its overall cap, and the expiry of clients never used.

``/register`` takes no credential, so it is bounded three ways (docs/reliability.md, "The
edge (hardening round two)"): per client address, where the address is the one a
*configured* proxy (``FORWARDED_ALLOW_IPS``) forwards and the TCP peer otherwise; overall
per hour, whatever the addresses; and a client no token was ever issued to is deleted
after ``CPERSONA_OAUTH_UNUSED_CLIENT_HOURS``. A "proxy" here is a real socket bound to
another loopback address (127.0.0.2), which Linux routes to the server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import dataclasses

import httpx

from service.app import background
from service.app.oauth import server
from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.flows import CALLBACK, FormConsent, OAuthSession
from tests.support import Served, new_tenant, serve

METADATA = {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"}
PROXY = "127.0.0.2"


def _from(address: str) -> httpx.AsyncClient:
    """An HTTP client whose connections leave from ``address`` (a loopback alias)."""
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=address))


async def _register(http: httpx.AsyncClient, served: Served, forwarded: str | None) -> int:
    headers = {} if forwarded is None else {"x-forwarded-for": forwarded}
    answer = await http.post(f"{served.base_url}/register", json=METADATA, headers=headers)
    return answer.status_code


async def test_behind_a_configured_proxy_registrations_are_counted_per_forwarded_address(
    settings: Settings, database_url: str
) -> None:
    proxied = dataclasses.replace(
        settings, oauth_registrations_per_hour=2.0, forwarded_allow_ips=(PROXY,)
    )
    async with serve(proxied, database_url, public=True) as served, _from(PROXY) as http:
        first = [await _register(http, served, "198.51.100.7") for _ in range(3)]
        # a client that puts its own header first gains nothing: the proxy appends
        spoofed = await _register(http, served, "203.0.113.99, 198.51.100.7")
        other = [await _register(http, served, "198.51.100.8") for _ in range(2)]
    assert first == [201, 201, 429]
    assert spoofed == 429
    assert other == [201, 201]


async def test_forwarded_headers_from_a_peer_that_is_not_a_configured_proxy_are_ignored(
    settings: Settings, database_url: str
) -> None:
    throttled = dataclasses.replace(settings, oauth_registrations_per_hour=2.0)
    async with serve(throttled, database_url, public=True) as served, _from("127.0.0.1") as http:
        codes = [await _register(http, served, f"192.0.2.{n}") for n in range(1, 4)]
    assert codes == [201, 201, 429]


async def test_registrations_over_the_overall_hourly_cap_get_429_whatever_the_address(
    settings: Settings, database_url: str
) -> None:
    capped = dataclasses.replace(
        settings,
        oauth_registrations_per_hour=100.0,
        oauth_registrations_total_per_hour=3,
        forwarded_allow_ips=(PROXY,),
    )
    async with serve(capped, database_url, public=True) as served, _from(PROXY) as http:
        codes = [await _register(http, served, f"198.51.100.{n}") for n in range(1, 5)]
        refused = await http.post(
            f"{served.base_url}/register",
            json=METADATA,
            headers={"x-forwarded-for": "198.51.100.200"},
        )
    assert codes == [201, 201, 201, 429]
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert "all addresses" in refused.json()["error_description"]
    assert 1 <= int(refused.headers["retry-after"]) <= 3600


async def _backdate_clients(lib: Library, hours: float) -> None:
    async with lib.db.admin_conn() as conn:
        await conn.execute(
            "UPDATE oauth_clients SET created_at = now() - make_interval(hours => $1)", hours
        )


async def test_clients_never_issued_a_token_are_deleted_after_the_unused_client_hours(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "unused-clients")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        consent = FormConsent(key)
        session = OAuthSession(served, consent.open, consent.code)
        await session.call("list_memories", agent_id="a")
        assert session.storage.client is not None
        used = session.storage.client.client_id
        stale = (await http.post(f"{served.base_url}/register", json=METADATA)).json()
        await _backdate_clients(lib, 25.0)
        fresh = (await http.post(f"{served.base_url}/register", json=METADATA)).json()
        deleted = await server.expire_unused_clients(lib.db, older_than_hours=24.0)
        again = await server.expire_unused_clients(lib.db, older_than_hours=24.0)
        await session.call("list_memories", agent_id="a")  # the used client still works
    assert (deleted, again) == (1, 0)
    assert used is not None
    assert await server.find_client(lib.db, used) is not None
    assert await server.find_client(lib.db, stale["client_id"]) is None
    assert await server.find_client(lib.db, fresh["client_id"]) is not None


async def test_the_background_sweeper_deletes_stale_unused_clients_while_serving(
    lib: Library,
) -> None:
    stale, _ = await server.register_client(lib.db, dict(METADATA), confidential=False)
    await _backdate_clients(lib, 25.0)
    async with background.oauth_client_sweeper(lib):
        for _ in range(100):
            if await server.find_client(lib.db, stale) is None:
                break
            await asyncio.sleep(0.05)
    assert await server.find_client(lib.db, stale) is None
