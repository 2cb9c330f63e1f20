"""External-issuer mode: JWT access tokens of an identity provider the test runs itself.

The issuer is a small HTTP app on loopback with its own signing keys: it serves its
RFC 8414 metadata (naming its ``jwks_uri``) and its key set, and the test can rotate
the keys. The service discovers the key set from the metadata, caches it, and fetches
again when a token names a key it does not know. Every bad token is a 401 with
``error="invalid_token"``; a valid token of a tenant this service does not have is 403.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service.app.oauth.issuer import IssuerConfig, IssuerVerifier
from service.app.oauth.refusals import TokenRejected
from service.config import Settings
from service.mcp.tools import EVERYDAY, TOOL_ORDER
from service.memory.library import Library
from tests.support import Agent, Served, mcp_session, new_tenant, serve

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
JSON_HEADERS = {"accept": "application/json, text/event-stream"}


@dataclasses.dataclass
class SigningKey:
    kid: str
    algorithm: str
    private: Any

    @classmethod
    def new(cls, kid: str, algorithm: str = "ES256") -> SigningKey:
        private = (
            ec.generate_private_key(ec.SECP256R1())
            if algorithm.startswith("ES")
            else rsa.generate_private_key(public_exponent=65537, key_size=2048)
        )
        return cls(kid, algorithm, private)

    def jwk(self) -> dict[str, Any]:
        family = (
            jwt.algorithms.ECAlgorithm
            if self.algorithm.startswith("ES")
            else jwt.algorithms.RSAAlgorithm
        )
        document: dict[str, Any] = json.loads(family.to_jwk(self.private.public_key()))
        return {**document, "kid": self.kid, "alg": self.algorithm, "use": "sig"}


class Issuer:
    """The identity provider: metadata, a rotatable key set, and token minting."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.keys = [SigningKey.new("k1")]
        self.jwks_fetches = 0

    def app(self) -> Starlette:
        async def metadata(request: Request) -> Response:
            return JSONResponse({"issuer": self.url, "jwks_uri": f"{self.url}/jwks",
                                 "authorization_endpoint": f"{self.url}/authorize",
                                 "token_endpoint": f"{self.url}/token"})  # fmt: skip

        async def jwks(request: Request) -> Response:
            self.jwks_fetches += 1
            return JSONResponse({"keys": [key.jwk() for key in self.keys]})

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/jwks", jwks),
            ]
        )

    def token(self, audience: str, key: SigningKey | None = None, **claims: Any) -> str:
        key = key or self.keys[0]
        now = int(time.time())
        payload = {"iss": self.url, "aud": audience, "sub": "person-1", "iat": now,
                   "nbf": now, "exp": now + 600, "cpersona_tenant": "acme", **claims}  # fmt: skip
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, key.private, algorithm=key.algorithm, headers={"kid": key.kid})


@contextlib.asynccontextmanager
async def running_issuer() -> AsyncIterator[Issuer]:
    # proto TCP: only then does asyncio set TCP_NODELAY on accepted sockets (with
    # proto 0 each answer waited ~40 ms for the client's delayed ACK)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    issuer = Issuer(f"http://127.0.0.1:{listener.getsockname()[1]}")
    server = uvicorn.Server(uvicorn.Config(issuer.app(), log_config=None, lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the issuer did not start in 30 s"
        assert not task.done(), "the issuer stopped while starting"
        await asyncio.sleep(0.01)
    try:
        yield issuer
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
        listener.close()


@contextlib.asynccontextmanager
async def service_with(
    issuer: Issuer, settings: Settings, database_url: str
) -> AsyncIterator[Served]:
    external = dataclasses.replace(
        settings, oauth_issuer=issuer.url, oauth_jwks_refetch_seconds=0.0
    )
    async with serve(external, database_url, public=True) as served:
        yield served


async def ping(served: Served, token: str) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(
            served.mcp_url, json=PING, headers={**JSON_HEADERS, "authorization": f"Bearer {token}"}
        )


def tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["cpersona_tenant"] = "someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{header}.{forged}.{signature}"


def unsigned(audience: str, issuer: Issuer) -> str:
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": audience, "exp": now + 600, "cpersona_tenant": "acme"}
    return jwt.encode(claims, "", algorithm="none")


async def test_an_issuer_token_reaches_its_tenant_and_the_metadata_names_the_issuer(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        await Agent(served, key).call("store", agent_id="a", message={"content": "via key"})
        token = issuer.token(served.mcp_url)
        listed = await Agent(served, token).call("list_memories", agent_id="a")
        async with httpx.AsyncClient() as http:
            resource = await http.get(f"{served.base_url}/.well-known/oauth-protected-resource/mcp")
            builtin = await http.get(f"{served.base_url}/.well-known/oauth-authorization-server")
    assert [m["content"] for m in listed["memories"]] == ["via key"]
    assert resource.json()["authorization_servers"] == [issuer.url]
    assert builtin.status_code == 404


async def test_a_rotated_key_set_is_fetched_again_and_retired_keys_stop_working(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        old = issuer.keys[0]
        before = await ping(served, issuer.token(served.mcp_url))
        cached = await ping(served, issuer.token(served.mcp_url))
        fetches_while_cached = issuer.jwks_fetches
        issuer.keys = [SigningKey.new("k2", "RS256")]
        rotated = await ping(served, issuer.token(served.mcp_url))
        retired = await ping(served, issuer.token(served.mcp_url, key=old))
    assert (before.status_code, cached.status_code) == (200, 200)
    assert fetches_while_cached == 1
    assert rotated.status_code == 200
    assert retired.status_code == 401
    assert 'error="invalid_token"' in retired.headers["www-authenticate"]


async def test_wrong_audience_issuer_expired_early_tampered_and_unsigned_tokens_get_401(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        aud, now = served.mcp_url, int(time.time())
        stranger = SigningKey.new("k1")  # same kid, not the issuer's key
        bad = {
            "wrong audience": issuer.token("https://other.example/mcp"),
            "wrong issuer": issuer.token(aud, iss="https://idp.example"),
            "expired": issuer.token(aud, exp=now - 300, iat=now - 900, nbf=now - 900),
            "not yet valid": issuer.token(aud, nbf=now + 300),
            "no expiry": issuer.token(aud, exp=None),
            "tampered": tampered(issuer.token(aud)),
            "unsigned": unsigned(aud, issuer),
            "foreign key": issuer.token(aud, key=stranger),
            "not a jwt": "definitely-not-a-jwt",
        }
        answers = {reason: await ping(served, token) for reason, token in bad.items()}
        good = await ping(served, issuer.token(aud))
    for reason, answer in answers.items():
        assert answer.status_code == 401, reason
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith(f'Bearer resource_metadata="{served.base_url}/'), reason
        assert 'error="invalid_token"' in challenge, reason
    assert good.status_code == 200


async def test_a_valid_token_of_an_unknown_tenant_gets_403_with_a_clear_body(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        unknown = await ping(served, issuer.token(served.mcp_url, cpersona_tenant="nobody"))
        missing = await ping(served, issuer.token(served.mcp_url, cpersona_tenant=None))
        bad_grants = await ping(served, issuer.token(served.mcp_url, cpersona_grants={"a": "all"}))
        bad_tools = await ping(served, issuer.token(served.mcp_url, cpersona_tools="some"))
    assert unknown.status_code == 403
    assert unknown.json() == {
        "error": "unknown_tenant",
        "message": "the token's tenant 'nobody' does not exist on this service",
    }
    assert "www-authenticate" not in unknown.headers
    assert missing.status_code == 403
    assert "cpersona_tenant" in missing.json()["message"]
    assert bad_grants.status_code == 403
    assert "cpersona_grants" in bad_grants.json()["message"]
    assert bad_tools.status_code == 403
    assert "cpersona_tools" in bad_tools.json()["message"]


async def test_the_grants_claim_limits_what_an_issuer_token_may_do(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        token = issuer.token(served.mcp_url, cpersona_grants={"notes": "read", "*": "none"})
        agent = Agent(served, token)
        readable = await agent.call("list_memories", agent_id="notes")
        store = await agent.call("store", agent_id="notes", message={"content": "x"})
    assert readable == {"memories": [], "count": 0}
    assert store["error"] == "permission_denied"
    assert store["required"] == "read-write"


async def test_the_tools_claim_chooses_the_tool_set_an_issuer_token_sees(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "acme")
    async with running_issuer() as issuer, service_with(issuer, settings, database_url) as served:
        everyday = issuer.token(served.mcp_url, cpersona_tools="everyday")
        async with mcp_session(served, everyday) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
        async with mcp_session(served, issuer.token(served.mcp_url)) as session:
            default = {tool.name for tool in (await session.list_tools()).tools}
    assert listed == set(EVERYDAY)
    assert default == set(TOOL_ORDER)  # every tool (the count is pinned in test_tool_catalogue)


async def test_unknown_key_ids_refetch_the_key_set_at_most_once_per_cooldown(
    lib: Library,
) -> None:
    async with running_issuer() as issuer:
        config = IssuerConfig(issuer.url, "aud", "cpersona_tenant", "cpersona_grants",
                              cache_seconds=300, refetch_seconds=3600)  # fmt: skip
        verifier = IssuerVerifier(config)
        assert await verifier.claims(issuer.token("aud"))
        for number in range(5):
            forged = issuer.token("aud", key=SigningKey.new(f"forged-{number}"))
            try:
                await verifier.claims(forged)
            except TokenRejected:
                continue
            raise AssertionError("a token signed with an unknown key was accepted")
    assert issuer.jwks_fetches == 1
