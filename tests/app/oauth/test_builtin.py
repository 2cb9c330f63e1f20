"""The built-in authorization server, driven by the official SDK's OAuth client.

The SDK's ``OAuthClientProvider`` does what Claude Desktop and claude.ai connectors do:
a request without a token gets a 401 naming the protected-resource metadata, from
there it finds the authorization server, registers itself (RFC 7591), runs the code
flow with PKCE and a resource indicator, calls the tools with the access token and
refreshes it. The person's part (the consent page) is played over plain HTTP here and
by a real browser in ``test_browser.py``.
"""

from __future__ import annotations

import hashlib
import time

import httpx

from service.config import Settings
from service.mcp.tools import EVERYDAY
from service.memory import tenants
from service.memory.library import Library
from tests.app.oauth.flows import (
    CALLBACK,
    FormConsent,
    OAuthSession,
    hidden_fields,
    pkce,
    register,
)
from tests.support import Agent, Served, new_tenant, serve

JSON_HEADERS = {"accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def _code(
    http: httpx.AsyncClient, served: Served, client_id: str, key: str, challenge: str
) -> str:
    """Run /authorize by hand (consent page, then the post) and return the code."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        "resource": served.mcp_url,
    }
    page = await http.get(f"{served.base_url}/authorize", params=query)
    assert page.status_code == 200, page.text
    form = {**hidden_fields(page.text), "api_key": key, "decision": "approve"}
    answer = await http.post(f"{served.base_url}/authorize", data=form)
    assert answer.status_code == 302, answer.text
    location = httpx.URL(answer.headers["location"])
    assert str(location).startswith(CALLBACK + "?")
    assert location.params["state"] == "st4te"
    assert location.params["iss"] == served.base_url
    return location.params["code"]


async def _token(http: httpx.AsyncClient, served: Served, **form: str) -> httpx.Response:
    return await http.post(f"{served.base_url}/token", data=form)


async def test_the_sdk_oauth_client_discovers_registers_authorizes_and_recalls(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "oauth")
    async with serve(settings, database_url, public=True) as served:
        await Agent(served, key).call(
            "store", agent_id="a", message={"content": "the ferris wheel is blue"}
        )
        consent = FormConsent(key)
        session = OAuthSession(served, consent.open, consent.code)
        found = await session.call("recall", agent_id="a", query="ferris wheel", deep=True)
    assert [m["content"] for m in found["messages"]] == ["the ferris wheel is blue"]
    assert session.requests[:6] == [
        "POST /mcp",  # no token: 401 with resource_metadata
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
        "POST /register",
        "POST /token",
        "POST /mcp",
    ]
    assert "pytest connector" in consent.pages[0]
    assert session.storage.tokens is not None
    assert session.access_token.startswith("cpo_")


async def test_a_refresh_rotates_the_tokens_and_the_old_refresh_token_is_dead(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "rotate")
    async with serve(settings, database_url, public=True) as served:
        consent = FormConsent(key)
        session = OAuthSession(served, consent.open, consent.code)
        await session.call("list_memories", agent_id="a")
        assert session.storage.tokens is not None
        first = session.storage.tokens
        session.auth.context.token_expiry_time = time.time() - 1  # the access token is due
        session.requests.clear()
        await session.call("list_memories", agent_id="a")
        second = session.storage.tokens
        async with httpx.AsyncClient() as http:
            replay = await _token(
                http,
                served,
                grant_type="refresh_token",
                refresh_token=str(first.refresh_token),
                client_id=str(session.storage.client and session.storage.client.client_id),
            )
            old_access = await http.post(
                served.mcp_url,
                json=PING,
                headers={**JSON_HEADERS, "authorization": f"Bearer {first.access_token}"},
            )
    assert "POST /token" in session.requests
    assert "POST /register" not in session.requests
    assert second is not None
    assert second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    assert len(consent.pages) == 1  # the refresh needed no person
    assert replay.status_code == 400
    assert replay.json()["error"] == "invalid_grant"
    assert replay.headers["cache-control"] == "no-store"
    # the replay of a rotated refresh token revoked its whole family, this access token too
    # (test_families.py); the client must send the person through consent again
    assert old_access.status_code == 401


async def test_revoking_the_key_ends_its_tokens_on_the_next_request(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "revoke")
    async with serve(settings, database_url, public=True) as served:
        consent = FormConsent(key)
        session = OAuthSession(served, consent.open, consent.code)
        await session.call("list_memories", agent_id="a")
        token, tokens = session.access_token, session.storage.tokens
        assert tokens is not None
        assert session.storage.client is not None
        await tenants.revoke_key(lib.db, key[:16])
        async with httpx.AsyncClient() as http:
            refused = await http.post(
                served.mcp_url,
                json=PING,
                headers={**JSON_HEADERS, "authorization": f"Bearer {token}"},
            )
            refresh = await _token(
                http,
                served,
                grant_type="refresh_token",
                refresh_token=str(tokens.refresh_token),
                client_id=session.storage.client.client_id,
            )
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith(
        f'Bearer resource_metadata="{served.base_url}/.well-known/oauth-protected-resource/mcp"'
    )
    assert 'error="invalid_token"' in challenge
    assert refresh.status_code == 400
    assert refresh.json()["error"] == "invalid_grant"


async def test_a_token_has_the_grants_and_tool_set_of_the_key_it_was_issued_from(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "limited")
    writer = await tenants.create_key(lib.db, "limited", label="writer")
    reader = await tenants.create_key(
        lib.db,
        "limited",
        label="reader",
        grants={"shared": "read", "*": "none"},
        tool_set="everyday",
    )
    async with serve(settings, database_url, public=True) as served:
        await Agent(served, writer).call("store", agent_id="shared", message={"content": "hello"})
        await Agent(served, writer).call("store", agent_id="private", message={"content": "mine"})
        consent = FormConsent(reader)
        session = OAuthSession(served, consent.open, consent.code)
        shared = await session.call("list_memories", agent_id="shared")
        private = await session.call("list_memories", agent_id="private")
        store = await session.call("store", agent_id="shared", message={"content": "x"})
        async with session.client() as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
    assert listed == set(EVERYDAY)  # the key's tool set, too
    assert [m["content"] for m in shared["memories"]] == ["hello"]
    assert private["ok"] is False
    assert private["error"] == "permission_denied"
    assert store == {
        "ok": False,
        "error": "permission_denied",
        "tool": "store",
        "agent_id": "shared",
        "required": "read-write",
        "client_id": "reader",
        "result": "rejected",  # every refusal of store says so (CPersona 2.6, docs/tools.md)
    }


async def test_the_discovery_documents_name_the_public_urls(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        root = await http.get(f"{served.base_url}/.well-known/oauth-protected-resource")
        resource = await http.get(f"{served.base_url}/.well-known/oauth-protected-resource/mcp")
        server = await http.get(f"{served.base_url}/.well-known/oauth-authorization-server")
        preflight = await http.options(
            f"{served.base_url}/token",
            headers={"origin": "http://localhost:6274", "access-control-request-method": "POST"},
        )
    base = served.base_url
    assert root.json() == resource.json()
    assert resource.json() == {
        "resource": f"{base}/mcp",
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "resource_name": "CPersona memory",
    }
    document = server.json()
    assert document["issuer"] == base
    assert document["authorization_endpoint"] == f"{base}/authorize"
    assert document["token_endpoint"] == f"{base}/token"
    assert document["registration_endpoint"] == f"{base}/register"
    assert document["revocation_endpoint"] == f"{base}/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert server.headers["access-control-allow-origin"] == "*"
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"


async def test_every_oauth_route_refuses_a_foreign_host_and_serves_every_origin(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """A DNS-rebinding page sends its own name as Host (421); a browser client on another
    origin, with this server's Host, is served."""
    paths = [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/authorize",
    ]
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        rebound = [
            (await http.get(f"{served.base_url}{path}", headers={"host": "evil.example"}))
            for path in paths
        ]
        posts = [
            await http.post(f"{served.base_url}{path}", headers={"host": "evil.example:80"})
            for path in ("/token", "/revoke", "/register")
        ]
        foreign_origin = await http.get(
            f"{served.base_url}/.well-known/oauth-authorization-server",
            headers={"origin": "https://claude.ai"},
        )
    assert [answer.status_code for answer in rebound + posts] == [421] * 7
    assert foreign_origin.status_code == 200


async def test_without_a_public_url_oauth_is_off_and_api_keys_still_work(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "nooauth")
    async with serve(settings, database_url) as served, httpx.AsyncClient() as http:
        resource = await http.get(f"{served.base_url}/.well-known/oauth-protected-resource/mcp")
        server = await http.get(f"{served.base_url}/.well-known/oauth-authorization-server")
        registration = await http.post(f"{served.base_url}/register", json={})
        token = await http.post(
            served.mcp_url, json=PING, headers={**JSON_HEADERS, "authorization": "Bearer cpo_x"}
        )
        keyed = await http.post(
            served.mcp_url, json=PING, headers={**JSON_HEADERS, "authorization": f"Bearer {key}"}
        )
    assert resource.json() == {
        "resource": f"{served.base_url}/mcp",
        "bearer_methods_supported": ["header"],
        "resource_name": "CPersona memory",
    }
    assert server.status_code == 404
    assert registration.status_code == 404
    assert token.status_code == 401
    assert 'error="invalid_token"' in token.headers["www-authenticate"]
    assert keyed.status_code == 200


async def test_a_code_is_single_use_and_bound_to_its_verifier_client_and_redirect(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "codes")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client = await register(http, served)
        other = await register(http, served)
        verifier, challenge = pkce()
        base = {"grant_type": "authorization_code", "client_id": client["client_id"],
                "redirect_uri": CALLBACK}  # fmt: skip
        code = await _code(http, served, client["client_id"], key, challenge)
        wrong_verifier = await _token(http, served, **base, code=code, code_verifier=verifier + "x")
        code = await _code(http, served, client["client_id"], key, challenge)
        wrong_client = await _token(
            http,
            served,
            **{**base, "client_id": other["client_id"]},
            code=code,
            code_verifier=verifier,
        )
        code = await _code(http, served, client["client_id"], key, challenge)
        wrong_redirect = await _token(
            http,
            served,
            **{**base, "redirect_uri": CALLBACK + "/x"},
            code=code,
            code_verifier=verifier,
        )
        code = await _code(http, served, client["client_id"], key, challenge)
        wrong_resource = await _token(
            http,
            served,
            **base,
            code=code,
            code_verifier=verifier,
            resource="https://elsewhere/mcp",
        )
        code = await _code(http, served, client["client_id"], key, challenge)
        good = await _token(
            http, served, **base, code=code, code_verifier=verifier, resource=served.mcp_url
        )
        again = await _token(http, served, **base, code=code, code_verifier=verifier)
    assert [r.json()["error"] for r in (wrong_verifier, wrong_client, wrong_redirect)] == [
        "invalid_grant",
        "invalid_grant",
        "invalid_grant",
    ]
    assert wrong_resource.json()["error"] == "invalid_target"
    assert good.status_code == 200, good.text
    assert good.json()["token_type"] == "Bearer"
    assert good.json()["expires_in"] == 3600
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"


async def test_authorize_refuses_unregistered_redirects_plain_pkce_and_forged_posts(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "strict")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client = await register(http, served)
        _, challenge = pkce()
        query = {"response_type": "code", "client_id": client["client_id"],
                 "redirect_uri": CALLBACK, "code_challenge": challenge,
                 "code_challenge_method": "S256", "state": "s"}  # fmt: skip
        url = f"{served.base_url}/authorize"
        unknown_client = await http.get(url, params={**query, "client_id": "nope"})
        near_miss = await http.get(url, params={**query, "redirect_uri": CALLBACK + "/"})
        plain = await http.get(url, params={**query, "code_challenge_method": "plain"})
        page = await http.get(url, params=query)
        fields = {**hidden_fields(page.text), "api_key": key, "decision": "approve"}
        forged = await http.post(url, data={**fields, "csrf": "forged"})
        http.cookies.clear()
        no_cookie = await http.post(url, data=fields)
        page = await http.get(url, params=query)
        bad_key = await http.post(
            url, data={**hidden_fields(page.text), "api_key": key + "x", "decision": "approve"}
        )
        denied = await http.post(url, data={**hidden_fields(page.text), "decision": "deny"})
    assert unknown_client.status_code == 400
    assert "not registered" in unknown_client.text
    assert near_miss.status_code == 400
    assert "redirect URI" in near_miss.text
    assert plain.status_code == 400  # shown on our page, never redirected (test_redirects.py)
    assert "location" not in plain.headers
    assert "invalid_request" in plain.text
    assert page.status_code == 200
    headers = page.headers
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "form-action 'self' http://127.0.0.1:9" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    cookie = headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert forged.status_code == 400
    assert no_cookie.status_code == 400
    assert bad_key.status_code == 401
    assert "not valid" in bad_key.text
    assert denied.status_code == 302
    assert httpx.URL(denied.headers["location"]).params["error"] == "access_denied"


async def test_registration_checks_redirect_uris_and_hashes_confidential_secrets(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        url = f"{served.base_url}/register"
        remote_http = await http.post(url, json={"redirect_uris": ["http://evil.example/cb"]})
        script = await http.post(url, json={"redirect_uris": ["javascript:alert(1)"]})
        garbage = await http.post(url, content=b"{not json")
        huge = await http.post(url, content=b"x" * 100_000)
        huge_token = await http.post(f"{served.base_url}/token", content=b"a=" + b"x" * 100_000)
        confidential = await register(http, served, token_endpoint_auth_method="client_secret_post")
        native = await register(http, served, redirect_uris=["cursor://anysphere/oauth"])
    assert [r.status_code for r in (remote_http, script, garbage)] == [400, 400, 400]
    assert remote_http.json()["error"] == "invalid_client_metadata"
    assert (huge.status_code, huge_token.status_code) == (413, 413)
    assert confidential["client_secret"]
    assert confidential["client_secret_expires_at"] == 0
    assert "client_secret" not in native
    async with lib.db.admin_conn() as conn:
        stored = await conn.fetchval(
            "SELECT secret_hash FROM oauth_clients WHERE client_id = $1", confidential["client_id"]
        )
    assert bytes(stored) == hashlib.sha256(confidential["client_secret"].encode()).digest()


async def test_a_confidential_client_must_present_its_secret_at_the_token_endpoint(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "secret")
    async with serve(settings, database_url, public=True) as served, httpx.AsyncClient() as http:
        client = await register(http, served, token_endpoint_auth_method="client_secret_basic")
        verifier, challenge = pkce()
        form = {"grant_type": "authorization_code", "redirect_uri": CALLBACK,
                "code_verifier": verifier}  # fmt: skip
        code = await _code(http, served, client["client_id"], key, challenge)
        anonymous = await _token(http, served, **form, code=code, client_id=client["client_id"])
        code = await _code(http, served, client["client_id"], key, challenge)
        basic = await http.post(
            f"{served.base_url}/token",
            data={**form, "code": code},
            auth=(client["client_id"], client["client_secret"]),
        )
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "invalid_client"
    assert basic.status_code == 200, basic.text


async def test_a_token_reaches_only_the_tenant_of_the_key_that_authorized_it(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key_a = await new_tenant(lib, "tenant-a")
    key_b = await new_tenant(lib, "tenant-b")
    async with serve(settings, database_url, public=True) as served:
        await Agent(served, key_a).call("store", agent_id="x", message={"content": "a's secret"})
        consent_b = FormConsent(key_b)
        session_b = OAuthSession(served, consent_b.open, consent_b.code)
        seen_by_b = await session_b.call("list_memories", agent_id="x")
        consent_a = FormConsent(key_a)
        session_a = OAuthSession(served, consent_a.open, consent_a.code)
        seen_by_a = await session_a.call("list_memories", agent_id="x")
    assert seen_by_b == {"memories": [], "count": 0}
    assert [m["content"] for m in seen_by_a["memories"]] == ["a's secret"]
