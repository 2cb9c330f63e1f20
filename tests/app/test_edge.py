"""Real HTTP requests against the real app: auth, limits, health, protocol errors."""

from __future__ import annotations

import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from service.config import Settings
from service.memory.library import Library
from tests.support import new_tenant, serve

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


async def test_requests_without_a_valid_key_get_401_with_a_resource_metadata_challenge(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """RFC 9728 / the MCP authorization spec: every 401 names the protected-resource
    metadata; a presented but invalid bearer credential also says ``invalid_token``."""
    key = await new_tenant(lib, "auth")
    absent = [{}, {"authorization": "Basic dXNlcjpwYXNz"}, {"authorization": "Bearer"},
              {"authorization": "Token " + key}]  # fmt: skip
    invalid = [
        {"authorization": "Bearer cpk_000000000000_" + "x" * 43},
        {"authorization": f"Bearer {key}x"},
        {"authorization": "Bearer not-a-key-nor-a-token"},
    ]
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        metadata = f'resource_metadata="{served.base_url}/.well-known/oauth-protected-resource/mcp"'
        for extra in absent + invalid:
            response = await client.post(
                served.mcp_url, json=INIT, headers={**JSON_HEADERS, **extra}
            )
            assert response.status_code == 401, extra
            assert response.json() == {"error": "unauthorized"}
            challenge = response.headers["www-authenticate"]
            if extra in invalid:
                assert challenge.startswith(f'Bearer {metadata}, error="invalid_token"'), extra
            else:
                assert challenge == f"Bearer {metadata}", extra
            assert response.headers["x-request-id"]


async def test_valid_key_initializes_without_redirect(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "init")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}"}
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        response = await client.post(served.mcp_url, json=INIT, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["serverInfo"]["name"] == "cpersona-service"


async def test_mcp_with_a_trailing_slash_is_served_too_without_a_redirect(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """README "HTTP routes": no redirect between ``/mcp`` and ``/mcp/`` (issue 36, finding
    13): both are the endpoint, behind the same edge (a request without a key gets 401)."""
    key = await new_tenant(lib, "slash")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}"}
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        slashed = served.mcp_url + "/"
        response = await client.post(slashed, json=INIT, headers=headers)
        refused = await client.post(slashed, json=INIT, headers=JSON_HEADERS)
        auth = {"authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=auth) as http,
            Client(streamable_http_client(slashed, http_client=http)) as mcp,
        ):
            stored = await mcp.call_tool("store", {"agent_id": "a", "message": {"content": "x"}})
    assert response.status_code == 200, response.text
    assert response.json()["result"]["serverInfo"]["name"] == "cpersona-service"
    assert refused.status_code == 401
    assert refused.json() == {"error": "unauthorized"}
    assert not stored.is_error


async def test_revoked_key_stops_working_immediately(
    lib: Library, settings: Settings, database_url: str
) -> None:
    from service.memory import tenants

    key = await new_tenant(lib, "revoke")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}"}
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        assert (await client.post(served.mcp_url, json=INIT, headers=headers)).status_code == 200
        await tenants.revoke_key(lib.db, key[: tenants.PREFIX_LENGTH])
        assert (await client.post(served.mcp_url, json=INIT, headers=headers)).status_code == 401


async def test_oversized_body_gets_413(lib: Library, settings: Settings, database_url: str) -> None:
    key = await new_tenant(lib, "big")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}"}
    payload = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 << 20) + b'"}}'
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        response = await client.post(served.mcp_url, content=payload, headers=headers)
    assert response.status_code == 413
    assert "too large" in response.json()["error"]


async def test_malformed_json_rpc_gets_a_json_rpc_error_not_a_500(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "malformed")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}"}
    bodies = [b"{not json", b"[]", b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"1.0","method":"x"}']
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        for raw in bodies:
            response = await client.post(served.mcp_url, content=raw, headers=headers)
            assert 400 <= response.status_code < 500, (raw, response.status_code)
            assert "error" in response.json(), raw


async def test_health_and_readiness(lib: Library, settings: Settings, database_url: str) -> None:
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        health = await client.get(f"{served.base_url}/healthz")
        ready = await client.get(f"{served.base_url}/readyz")
    assert health.json() == {"status": "ok"}
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


async def test_foreign_host_header_is_refused_on_a_loopback_bind(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "hosts")
    headers = {**JSON_HEADERS, "authorization": f"Bearer {key}", "host": "evil.example"}
    async with serve(settings, database_url) as served, httpx.AsyncClient() as client:
        response = await client.post(served.mcp_url, json=INIT, headers=headers)
    assert response.status_code == 421
