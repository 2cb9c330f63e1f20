"""CORS over real HTTP: browser preflights and exposed headers for the allowed origins
only (CPERSONA_ALLOWED_ORIGINS); every other origin gets no CORS header."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from service.app.cors import origin_allowed
from service.config import Settings, load_settings
from service.errors import ConfigError
from service.memory.library import Library
from tests.app.test_edge import INIT, JSON_HEADERS
from tests.support import new_tenant, serve

APP = "https://app.example.com"
PREFLIGHT = {
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type, mcp-protocol-version",
}


def _cors(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


@pytest.fixture
def browser_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, allowed_origins=(APP, "http://localhost:*"))


async def test_an_allowed_origin_gets_its_preflight_answered(
    browser_settings: Settings, database_url: str
) -> None:
    async with serve(browser_settings, database_url) as served, httpx.AsyncClient() as http:
        answer = await http.options(served.mcp_url, headers={"origin": APP, **PREFLIGHT})
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == APP
    assert "POST" in answer.headers["access-control-allow-methods"]
    allowed = answer.headers["access-control-allow-headers"].lower()
    assert {"authorization", "content-type", "mcp-protocol-version"} <= {
        h.strip() for h in allowed.split(",")
    }
    assert "origin" in answer.headers["vary"].lower()
    assert "access-control-allow-credentials" not in answer.headers


async def test_answers_to_an_allowed_origin_expose_the_mcp_and_auth_headers(
    lib: Library, browser_settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "web")
    origin = {"origin": "http://localhost:6274"}
    async with serve(browser_settings, database_url) as served, httpx.AsyncClient() as http:
        ok = await http.post(
            served.mcp_url,
            json=INIT,
            headers={**JSON_HEADERS, **origin, "authorization": f"Bearer {key}"},
        )
        refused = await http.post(served.mcp_url, json=INIT, headers={**JSON_HEADERS, **origin})
    for answer in (ok, refused):
        assert answer.headers["access-control-allow-origin"] == "http://localhost:6274"
        exposed = {
            h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")
        }
        assert {"mcp-session-id", "mcp-protocol-version", "www-authenticate"} <= exposed
    assert ok.status_code == 200
    assert refused.status_code == 401


async def test_an_origin_not_allowed_gets_no_cors_header(
    lib: Library, browser_settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "web")
    evil = {"origin": "https://evil.example"}
    async with serve(browser_settings, database_url) as served, httpx.AsyncClient() as http:
        preflight = await http.options(served.mcp_url, headers={**evil, **PREFLIGHT})
        call = await http.post(
            served.mcp_url,
            json=INIT,
            headers={**JSON_HEADERS, **evil, "authorization": f"Bearer {key}"},
        )
    assert preflight.status_code != 204
    assert _cors(preflight) == {}
    assert _cors(call) == {}
    assert call.status_code == 403  # the edge's Origin check on a loopback bind


async def test_without_allowed_origins_no_request_gets_cors_headers(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served, httpx.AsyncClient() as http:
        preflight = await http.options(
            served.mcp_url, headers={"origin": "http://localhost:6274", **PREFLIGHT}
        )
    assert _cors(preflight) == {}


def test_origin_patterns_match_exactly_or_by_any_port() -> None:
    allowed = (APP, "http://localhost:*")
    assert origin_allowed(APP, allowed)
    assert origin_allowed("http://localhost:6274", allowed)
    assert origin_allowed("http://localhost", allowed)
    assert not origin_allowed("http://localhost.evil.example:80", allowed)
    assert not origin_allowed("https://app.example.com.evil", allowed)
    assert not origin_allowed("http://app.example.com", allowed)


def test_a_malformed_allowed_origin_is_a_one_line_error_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="CPERSONA_ALLOWED_ORIGINS"):
        load_settings({"CPERSONA_ALLOWED_ORIGINS": "app.example.com"}, stderr_is_tty=False)
    parsed = load_settings({"CPERSONA_ALLOWED_ORIGINS": f"{APP}, http://localhost:*"})
    assert parsed.allowed_origins == (APP, "http://localhost:*")
