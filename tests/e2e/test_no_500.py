"""Issue 36 (7): requests that were answered 500 with a traceback get a clean 4xx.

Each case is one reported reproduction, sent to the real app over HTTP: ``/register``
with deeply nested JSON (unauthenticated), ``tools/call`` with a non-string ``name``,
an external issuer's JWT with ``alg: ES256`` naming an RSA key (unauthenticated), and
the download of an export whose file name holds CR/LF. None may answer 5xx, and none
may leave a traceback in the log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import jwt
import pytest

from service.config import Settings
from service.memory.library import Library
from tests.app.oauth.test_external import SigningKey, ping, running_issuer, service_with
from tests.e2e.fuzzing import assert_quiet
from tests.support import Agent, Served, new_tenant, serve

MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
def quiet_log(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> Iterator[None]:
    """Fails the test when anything logged a traceback or an error (stdlib or structlog)."""
    yield
    assert_quiet(caplog, capfd)


@pytest.mark.usefixtures("quiet_log")
async def test_register_with_deeply_nested_json_is_a_400(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        for deep in ("[" * 5000 + "]" * 5000, '{"a":' * 2000 + "1" + "}" * 2000):
            response = await http.post(
                f"{served.base_url}/register",
                content=deep,
                headers={"content-type": "application/json"},
            )
            assert response.status_code == 400, response.text
            assert response.json()["error"] == "invalid_client_metadata"
            assert "nested" in response.json()["error_description"]


@pytest.mark.usefixtures("quiet_log")
async def test_tools_call_with_a_non_string_name_is_a_clear_error(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "acme")
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(timeout=30) as http:
        for name in (5, None, ["store"], {"a": 1}, True, 1.5):
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": name, "arguments": {}},
            }
            response = await http.post(served.mcp_url, json=call, headers=headers)
            assert response.status_code < 500, (name, response.text)
            reply = response.json()
            assert reply["id"] == 7
            assert reply["error"]["code"] == -32602, reply
            assert "internal" not in reply["error"]["message"].lower()


@pytest.mark.usefixtures("quiet_log")
async def test_an_es256_token_naming_an_rsa_key_is_a_401(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        rsa_key = SigningKey.new("rsa-1", "RS256")
        issuer.keys.append(rsa_key)
        ec_key = SigningKey.new("rsa-1", "ES256")  # signs ES256, names the RSA key's kid
        now = int(time.time())
        claims = {"iss": issuer.url, "aud": served.mcp_url, "exp": now + 600,
                  "cpersona_tenant": "acme"}  # fmt: skip
        forged = jwt.encode(claims, ec_key.private, algorithm="ES256", headers={"kid": "rsa-1"})
        rsa_signed = jwt.encode(claims, rsa_key.private, algorithm="RS256", headers={"kid": "k1"})
        for token in (forged, rsa_signed):  # ES256 naming an RSA key, RS256 naming an EC key
            response = await ping(served, token)
            assert response.status_code == 401, response.text
            assert 'error="invalid_token"' in response.headers["www-authenticate"]
        # and a well-formed RS256 token of that key still works
        genuine = issuer.token(served.mcp_url, key=rsa_key)
        assert (await ping(served, genuine)).status_code == 200


@pytest.mark.usefixtures("quiet_log")
async def test_downloading_an_export_whose_name_holds_cr_lf_is_served_with_a_safe_header(
    lib: Library, served: Served
) -> None:
    agent = Agent(served, await new_tenant(lib, "acme"))
    await agent.call("store", agent_id="a", message={"content": "a fact"})
    name = 'evil\r\nset-cookie: x=1\r\n\x00\x7f"\\.jsonl'.replace("\x00", "")
    exported = await agent.call("export_memories", agent_id="a", output_path=name)
    async with httpx.AsyncClient(base_url=served.base_url, timeout=30) as http:
        headers = {"authorization": f"Bearer {agent.key}"}
        response = await http.get(exported["download_url"], headers=headers)
    assert response.status_code == 200, response.text
    assert "set-cookie" not in response.headers
    disposition = response.headers["content-disposition"]
    assert disposition == 'attachment; filename="evil__set-cookie: x=1____.jsonl"'
    assert json.loads(response.content.splitlines()[0])
