"""A database that is down or busy gets a clear 503, never a 500 or a success-shaped error.

The app reaches its database through a loopback proxy (an external ``DATABASE_URL``).
While the proxy is cut: ``/healthz`` stays 200 (liveness), ``/readyz`` is 503, and an
MCP request is a 503 with ``Retry-After`` whose body is a JSON-RPC error (code
-32003) carrying the request's id. Once the proxy is back the same calls succeed
with no manual step. A pool whose connections are all held answers the same way
after ``CPERSONA_DB_ACQUIRE_TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Any

import httpx

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.models import Caller, TenantId
from tests.proxy import database_proxy
from tests.support import serve

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def _store(rpc_id: int, content: str) -> dict[str, Any]:
    arguments = {"agent_id": "a", "message": {"content": content}}
    params = {"name": "store", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": params}


async def _anonymous(lib: Library) -> Caller:
    row = await tenants.create_tenant(lib.db, "default")
    return Caller(TenantId(row.id), row.slug, "anonymous", "anonymous", {"*": "read-write"})


def _assert_unavailable(response: httpx.Response, rpc_id: int | None) -> None:
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1
    body = response.json()
    assert body["id"] == rpc_id
    assert body["error"]["code"] == -32003
    assert body["error"]["data"]["reason"] in ("database_unavailable", "database_busy")
    assert "temporarily unavailable" in body["error"]["message"]


async def test_a_database_outage_is_503_with_retry_after_and_heals_by_itself(
    lib: Library, settings: Settings, database_url: str
) -> None:
    anonymous = await _anonymous(lib)
    async with (
        database_proxy(database_url) as proxy,
        serve(settings, proxy.url, anonymous) as served,
        httpx.AsyncClient(timeout=10) as http,
    ):
        first = await http.post(served.mcp_url, json=_store(1, "before"), headers=HEADERS)
        assert json.loads(first.json()["result"]["content"][0]["text"])["result"] == "stored"
        await proxy.cut()
        for rpc_id in (7, 8, 9):
            response = await http.post(served.mcp_url, json=_store(rpc_id, "x"), headers=HEADERS)
            _assert_unavailable(response, rpc_id)
        assert (await http.get(f"{served.base_url}/healthz")).status_code == 200
        ready = await http.get(f"{served.base_url}/readyz")
        assert (ready.status_code, ready.json()["status"]) == (503, "unavailable")
        await proxy.restore()
        deadline = time.monotonic() + 15
        while True:
            response = await http.post(served.mcp_url, json=_store(10, "after"), headers=HEADERS)
            if response.status_code == 200 or time.monotonic() > deadline:
                break
            _assert_unavailable(response, 10)
            await asyncio.sleep(0.1)
        assert response.status_code == 200
        assert '"stored"' in response.json()["result"]["content"][0]["text"]
        assert (await http.get(f"{served.base_url}/readyz")).status_code == 200


async def test_a_pool_that_stays_full_is_503_after_the_acquire_timeout(
    lib: Library, settings: Settings, database_url: str
) -> None:
    anonymous = await _anonymous(lib)
    tight = dataclasses.replace(
        settings, db_pool_min=0, db_pool_max=2, db_acquire_timeout=0.5, db_tenant_share=1.0
    )  # one tenant fills the pool: no tenant share (tests/db/test_tenant_share.py)
    async with (
        serve(tight, database_url, anonymous) as served,
        httpx.AsyncClient(timeout=30) as http,
    ):
        async with lib.db.admin_tx() as conn:
            await conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
            blocked = [
                asyncio.create_task(
                    http.post(served.mcp_url, json=_store(n, f"m{n}"), headers=HEADERS)
                )
                for n in (1, 2)
            ]
            await asyncio.sleep(0.5)  # both hold a connection, waiting for the lock
            started = time.monotonic()
            refused = await http.post(served.mcp_url, json=_store(3, "m3"), headers=HEADERS)
            assert time.monotonic() - started < 3
        answers = await asyncio.wait_for(asyncio.gather(*blocked), 30)  # the lock is gone
    _assert_unavailable(refused, 3)
    assert refused.json()["error"]["data"]["reason"] == "database_busy"
    assert [answer.status_code for answer in answers] == [200, 200]


async def test_the_oauth_routes_answer_503_with_retry_after_while_the_database_is_down(
    settings: Settings, database_url: str
) -> None:
    """The built-in authorization server is not behind the /mcp edge; it answers a
    database outage the same way, then heals with the database."""
    registration = {
        "redirect_uris": ["http://127.0.0.1:9/cb"],
        "token_endpoint_auth_method": "none",
    }
    async with (
        database_proxy(database_url) as proxy,
        serve(settings, proxy.url, public=True) as served,
        httpx.AsyncClient(timeout=10) as http,
    ):
        base = served.base_url
        await proxy.cut()
        down = [
            await http.post(f"{base}/register", json=registration),
            await http.post(
                f"{base}/token", data={"grant_type": "refresh_token", "client_id": "c"}
            ),
            await http.post(f"{base}/revoke", data={"token": "t", "client_id": "c"}),
            await http.get(f"{base}/authorize", params={"client_id": "c", "response_type": "code"}),
        ]
        await proxy.restore()
        deadline = time.monotonic() + 15
        while (healed := await http.post(f"{base}/register", json=registration)).status_code != 201:
            assert time.monotonic() < deadline, healed.text
            await asyncio.sleep(0.1)
    for answer in down:
        assert answer.status_code == 503, (answer.request.url.path, answer.text)
        assert int(answer.headers["retry-after"]) >= 1
        assert "temporarily unavailable" in answer.json()["error"]
