"""Issue 36 (7): a bounded fuzz of every HTTP route and every tool — no 5xx, no traceback.

The real app (built-in OAuth on, so every route exists) is served on loopback; seeded
generators (:mod:`tests.e2e.fuzzing`) send each tool arguments built from
its JSON schema with hostile values mixed in, hostile JSON-RPC envelopes, and hostile
requests to every route (methods, credentials, query strings, bodies, content types).
Every answer must be below 500 and free of a traceback, and nothing may log one. The
route table is read from the app, so a new route without cases here fails the test.
The seed is fixed and the counts bounded (well under a minute on a small machine).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.routing import Route

from service.app.console import security
from service.app.factory import create_app
from service.config import Settings
from service.mcp import tools
from service.memory.library import Library
from tests.app.console.client import hidden_fields
from tests.e2e.fuzzing import DEEP_JSON, HOSTILE_STRINGS, Fuzzer, assert_quiet, encode
from tests.support import Agent, Served, new_tenant, serve

SEED = 36
CALLS_PER_TOOL = 14
REQUESTS_PER_ROUTE = 24
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Registrations unthrottled, so the fuzz reaches past /register's rate limit."""
    return dataclasses.replace(settings, oauth_registrations_per_hour=0)


@dataclasses.dataclass
class Context:
    """What the route cases use to reach past the first checks."""

    key: str
    download_path: str
    client_id: str
    console_csrf: str = ""


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    content: bytes = b""


def _q(value: Any, limit: int = 3000) -> str:
    """``value`` percent-encoded for a URL (lone surrogates too), at most ``limit`` chars."""
    text = value if isinstance(value, str) else json.dumps(value)
    return quote(text[:limit].encode("utf-8", "surrogatepass"), safe="")


def _query(fuzz: Fuzzer, names: list[str]) -> str:
    pairs = [f"{_q(name)}={_q(fuzz.string())}" for name in names if fuzz.rng.random() < 0.7]
    if fuzz.rng.random() < 0.2:
        pairs.append(f"{_q(fuzz.string())}={_q(fuzz.hostile())}")
    return "&".join(pairs)


def _auth(fuzz: Fuzzer, ctx: Context) -> dict[str, str]:
    choice = fuzz.rng.choice(
        [ctx.key, ctx.key, "cpk_bogus_" + "x" * 40, "cpo_bogus", "a.b.c", "eyJ.eyJ.sig", None]
    )
    return {"authorization": f"Bearer {choice}"} if choice else {}


def _headers(fuzz: Fuzzer, ctx: Context) -> dict[str, str]:
    headers = _auth(fuzz, ctx)
    content_type = fuzz.rng.choice(
        [
            None,
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/x-ndjson",
        ]
    )
    if content_type:
        headers["content-type"] = content_type
    if fuzz.rng.random() < 0.1:
        headers["origin"] = fuzz.rng.choice(["http://evil.example", "null", "http://127.0.0.1"])
    return headers


def _body(fuzz: Fuzzer) -> bytes:
    """Anything: JSON of hostile values, a form, raw bytes, deep nesting."""
    kind = fuzz.rng.randrange(5)
    if kind == 0:
        return encode(fuzz.arguments({"properties": {n: {} for n in ("a", "b", "c")}}))
    if kind == 1:
        return f"a={_q(fuzz.string())}&b={_q(fuzz.hostile())}".encode()
    if kind == 2:
        return bytes(fuzz.rng.randrange(256) for _ in range(fuzz.rng.randrange(64)))
    if kind == 3:
        return DEEP_JSON.encode()
    return b""


def _jsonl(fuzz: Fuzzer) -> bytes:
    """An import file: records of every type with hostile fields, and broken lines."""
    lines = []
    for _ in range(fuzz.rng.randrange(1, 6)):
        record = {
            "_type": fuzz.rng.choice(["header", "memory", "episode", "profile", "junk", 5]),
            "agent_id": fuzz.string(),
            "content": fuzz.value({"type": "string"}),
            "summary": fuzz.value({"type": "string"}),
            fuzz.string(): fuzz.hostile(),
        }
        lines.append(encode(record))
    if fuzz.rng.random() < 0.3:
        lines.append(
            fuzz.rng.choice([b"{not json", b"\xff\xfe", b"\x00", b"NaN", DEEP_JSON.encode()])
        )
    return b"\n".join(lines) + b"\n"


def _rpc(fuzz: Fuzzer) -> bytes:
    """A JSON-RPC envelope with hostile parts: method, id, params, name, batches."""
    names = [spec.name for spec in tools.all_tools()]
    envelope: dict[str, Any] = {
        "jsonrpc": fuzz.rng.choice(["2.0", "2.0", "1.0", None, 2]),
        "id": fuzz.rng.choice([1, "x", None, 1.5, [], {}, 2**70]),
        "method": fuzz.rng.choice(
            [
                "tools/call",
                "tools/call",
                "tools/list",
                "initialize",
                "ping",
                "server/discover",
                "resources/list",
                "nope",
                5,
                None,
            ]
        ),
        "params": fuzz.rng.choice(
            [
                {"name": fuzz.rng.choice([*names, fuzz.hostile()]), "arguments": fuzz.hostile()},
                {"name": fuzz.hostile()},
                fuzz.hostile(),
                {},
            ]
        ),
    }
    if fuzz.rng.random() < 0.1:
        return encode([envelope, envelope])
    return encode(envelope)


def _mcp_at(path: str) -> Callable[[Fuzzer, Context], Request]:
    """The MCP endpoint's cases at ``path`` (``/mcp`` and ``/mcp/`` are one endpoint)."""

    def build(fuzz: Fuzzer, ctx: Context) -> Request:
        method = fuzz.rng.choice(["POST"] * 6 + ["GET", "DELETE", "OPTIONS", "HEAD"])
        headers = {**MCP_HEADERS, **_auth(fuzz, ctx)}
        if fuzz.rng.random() < 0.2:
            headers["accept"] = fuzz.rng.choice(["text/html", "*/*", "application/json"])
        content = _rpc(fuzz) if fuzz.rng.random() < 0.8 else _body(fuzz)
        return Request(method, path, headers, content if method == "POST" else b"")

    return build


def _simple(method: str, path: str) -> Callable[[Fuzzer, Context], Request]:
    def build(fuzz: Fuzzer, ctx: Context) -> Request:
        verb = fuzz.rng.choice([method, method, "HEAD", "OPTIONS", "PUT"])
        return Request(verb, f"{path}?{_query(fuzz, ['x'])}", _headers(fuzz, ctx))

    return build


def _export(fuzz: Fuzzer, ctx: Context) -> Request:
    query = _query(fuzz, ["agent_id", "include_embeddings"])
    return Request("GET", f"/v1/export?{query}", _headers(fuzz, ctx))


def _import(fuzz: Fuzzer, ctx: Context) -> Request:
    query = _query(fuzz, ["target_agent_id", "dry_run"])
    return Request("POST", f"/v1/import?{query}", _headers(fuzz, ctx), _jsonl(fuzz))


def _download(fuzz: Fuzzer, ctx: Context) -> Request:
    path = fuzz.rng.choice(
        [
            ctx.download_path,
            ctx.download_path,
            f"/v1/files/{_q(fuzz.string())}",
            ctx.download_path[:-3] + "abc",
            "/v1/files/" + "A" * 500,
        ]
    )
    return Request("GET", path, _headers(fuzz, ctx))


def _upload(fuzz: Fuzzer, ctx: Context) -> Request:
    name = fuzz.rng.choice([*HOSTILE_STRINGS[:12], "ok.jsonl", "dir/ok.jsonl", "a/../b"])
    path = "/v1/files/" + "/".join(_q(part, 400) or "x" for part in name.split("/"))
    return Request("POST", path, _headers(fuzz, ctx), _jsonl(fuzz))


OAUTH_FIELDS = [
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
    "scope",
    "resource",
    "api_key",
    "decision",
    "grant_type",
    "code",
    "code_verifier",
    "refresh_token",
    "client_secret",
    "token",
]


def _oauth_form(fuzz: Fuzzer, ctx: Context) -> str:
    pairs = []
    for name in OAUTH_FIELDS:
        if fuzz.rng.random() < 0.4:
            value = fuzz.rng.choice([ctx.client_id, ctx.key, "code", "S256", fuzz.string()])
            pairs.append(f"{name}={_q(value)}")
    return "&".join(pairs)


def _authorize(fuzz: Fuzzer, ctx: Context) -> Request:
    if fuzz.rng.random() < 0.5:
        return Request("GET", f"/authorize?{_oauth_form(fuzz, ctx)}", _headers(fuzz, ctx))
    headers = {"content-type": "application/x-www-form-urlencoded"}
    return Request("POST", "/authorize", headers, _oauth_form(fuzz, ctx).encode())


def _form_post(path: str) -> Callable[[Fuzzer, Context], Request]:
    def build(fuzz: Fuzzer, ctx: Context) -> Request:
        headers = {"content-type": "application/x-www-form-urlencoded"}
        if fuzz.rng.random() < 0.3:
            headers["authorization"] = fuzz.rng.choice(
                ["Basic !!!", "Basic " + "QQ==", "Basic Og==", f"Basic {ctx.client_id}"]
            )
        content = _oauth_form(fuzz, ctx).encode() if fuzz.rng.random() < 0.8 else _body(fuzz)
        return Request("POST", path, headers, content)

    return build


def _register(fuzz: Fuzzer, ctx: Context) -> Request:
    metadata = {
        "redirect_uris": fuzz.value({"type": "array", "items": {"type": "string"}}),
        "client_name": fuzz.value({"type": "string"}),
        "grant_types": fuzz.value(
            {"type": "array", "items": {"enum": ["authorization_code", "refresh_token", "x"]}}
        ),
        "token_endpoint_auth_method": fuzz.value({"enum": ["none", "client_secret_post", "x"]}),
        "response_types": fuzz.value({"type": "array", "items": {"enum": ["code", "token"]}}),
        fuzz.string(): fuzz.hostile(),
    }
    content = encode(metadata) if fuzz.rng.random() < 0.8 else _body(fuzz)
    return Request("POST", "/register", {"content-type": "application/json"}, content)


CONSOLE_FIELDS = ["agent", "ref", "show", "before", "after", "q", "channel", "project",
                  "source", "done", "content", "confirmed", "api_key", "csrf", "from", "to",
                  "code", "state", "error"]  # fmt: skip


def _console(path: str) -> Callable[[Fuzzer, Context], Request]:
    """The console's pages, GET with hostile queries or POST with hostile forms (with the
    signed-in session's CSRF token half the time, so posts reach the handlers)."""

    def build(fuzz: Fuzzer, ctx: Context) -> Request:
        concrete = path.replace("{name}", fuzz.rng.choice(["console.css", "favicon.svg", "x"]))
        concrete = concrete.replace("{action}", fuzz.rng.choice(["edit", "lock", "delete", "?"]))
        if fuzz.rng.random() < 0.5:
            return Request("GET", f"{concrete}?{_query(fuzz, CONSOLE_FIELDS)}", {})
        form = _query(fuzz, CONSOLE_FIELDS)
        if fuzz.rng.random() < 0.5:
            form += f"&csrf={ctx.console_csrf}&confirmed=yes&agent=a&ref=mem%3A1"
        content = form.encode() if fuzz.rng.random() < 0.8 else _body(fuzz)
        headers = {"content-type": "application/x-www-form-urlencoded"}
        return Request("POST", concrete, headers, content)

    return build


CONSOLE_PATHS = ("/console", "/console/", "/console/sign-in", "/console/sign-out",
                 "/console/tenants", "/console/agents", "/console/agent", "/console/search",
                 "/console/record", "/console/record/edit", "/console/record/{action}",
                 "/console/usage", "/console/health", "/console/export",
                 "/console/static/{name}", "/console/sign-in/oauth",
                 "/console/oauth/callback")  # fmt: skip

ROUTES: dict[str, Callable[[Fuzzer, Context], Request]] = {
    "/healthz": _simple("GET", "/healthz"),
    "/readyz": _simple("GET", "/readyz"),
    "/metrics": _simple("GET", "/metrics"),
    "/mcp": _mcp_at("/mcp"),
    "/mcp/": _mcp_at("/mcp/"),
    "/v1/export": _export,
    "/v1/import": _import,
    "/v1/files/{token}": _download,
    "/v1/files/{name:path}": _upload,
    "/.well-known/oauth-protected-resource": _simple(
        "GET", "/.well-known/oauth-protected-resource"
    ),
    "/.well-known/oauth-protected-resource/mcp": _simple(
        "GET", "/.well-known/oauth-protected-resource/mcp"
    ),
    "/.well-known/oauth-authorization-server": _simple(
        "GET", "/.well-known/oauth-authorization-server"
    ),
    "/authorize": _authorize,
    "/token": _form_post("/token"),
    "/revoke": _form_post("/revoke"),
    "/register": _register,
    **{path: _console(path) for path in CONSOLE_PATHS},
}


def _assert_clean(what: Any, response: httpx.Response) -> None:
    assert response.status_code < 500, (what, response.status_code, response.text[:500])
    assert "Traceback" not in response.text, (what, response.text[:500])
    assert "internal error" not in response.text, (what, response.text[:500])


def test_the_route_fuzzer_covers_every_route_of_the_app(settings: Settings) -> None:
    app = create_app(
        dataclasses.replace(settings, public_url="http://127.0.0.1:1"), "postgresql:///x"
    )
    paths = {route.path for route in app.routes if isinstance(route, Route)}
    assert paths == set(ROUTES)


async def _context(lib: Library, served: Served, http: httpx.AsyncClient) -> Context:
    key = await new_tenant(lib, "fuzz")
    agent = Agent(served, key)
    await agent.call("store", agent_id="a", message={"content": "a fact"})
    exported = await agent.call("export_memories", agent_id="a", output_path="f\r\nx.jsonl")
    registration = {
        "redirect_uris": ["http://127.0.0.1/cb"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
    }
    client = (await http.post("/register", json=registration)).json()
    form = await http.get("/console/sign-in")  # the client's jar keeps the session cookie
    token = hidden_fields(form.text)["csrf"]
    await http.post("/console/sign-in", data={"csrf": token, "api_key": key})
    download = httpx.URL(exported["download_url"]).raw_path.decode()
    csrf = security.session_token(http.cookies.get("cpersona_console") or "")
    return Context(key, download, client["client_id"], csrf)


async def test_every_route_answers_generated_hostile_requests_without_a_5xx(
    lib: Library,
    settings: Settings,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    fuzz = Fuzzer(SEED)
    async with (
        serve(settings, database_url, public=True) as served,
        httpx.AsyncClient(base_url=served.base_url, timeout=30) as http,
    ):
        ctx = await _context(lib, served, http)
        for path, build in ROUTES.items():
            for _ in range(REQUESTS_PER_ROUTE):
                request = build(fuzz, ctx)
                response = await http.request(
                    request.method, request.path, headers=request.headers, content=request.content
                )
                _assert_clean((path, request), response)
    assert_quiet(caplog, capfd)


def _call(name: str, arguments: Any, number: int) -> bytes:
    rpc = {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return encode(rpc)


async def test_every_tool_answers_generated_hostile_arguments_without_a_5xx(
    lib: Library,
    served: Served,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    fuzz = Fuzzer(SEED)
    key = await new_tenant(lib, "fuzz")
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}"}
    specs = tools.all_tools()
    assert [spec.name for spec in specs] == list(tools.TOOL_ORDER)
    calls = 0
    async with httpx.AsyncClient(timeout=60) as http:
        for spec in specs:
            for _ in range(CALLS_PER_TOOL):
                arguments: Any = fuzz.arguments(spec.input_schema)
                if fuzz.rng.random() < 0.05:
                    arguments = fuzz.hostile()
                calls += 1
                body = _call(spec.name, arguments, calls)
                response = await http.post(served.mcp_url, headers=headers, content=body)
                _assert_clean((spec.name, body[:300]), response)
    assert calls == len(specs) * CALLS_PER_TOOL
    assert_quiet(caplog, capfd)
