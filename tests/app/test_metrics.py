"""``GET /metrics``: Prometheus counters per tool, outcome and tenant, exact byte counts."""

from __future__ import annotations

import dataclasses

import httpx
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.app.factory import create_app
from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, Served, new_tenant, serve

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}
SECRET = "the vault code is 4711"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _scrape(served: Served) -> tuple[str, Samples]:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{served.base_url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response.text, samples


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def _post(served: Served, key: str | None, payload: bytes) -> httpx.Response:
    headers = dict(HEADERS)
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(served.mcp_url, headers=headers, content=payload)


def _tool_call(tool: str, arguments: str = "{}") -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'
        + tool.encode()
        + b'","arguments":'
        + arguments.encode()
        + b"}}"
    )


async def test_metrics_count_requests_per_tool_outcome_and_tenant(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "metered")
    agent = Agent(served, key)
    for content in (SECRET, SECRET):
        await agent.call("store", agent_id="secret-agent", message={"content": content})
    await agent.call("list_memories", agent_id="secret-agent")
    await _post(served, key, _tool_call("no_such_tool_" + "x" * 30))
    await _post(served, None, _tool_call("list_memories"))
    exposition, samples = await _scrape(served)
    requests = "cpersona_mcp_requests_total"
    assert _value(samples, requests, tool="store", outcome="stored") == 1
    assert _value(samples, requests, tool="store", outcome="skipped") == 1
    assert _value(samples, requests, tool="list_memories", outcome="ok") == 1
    assert _value(samples, requests, tool="unknown", outcome="unknown_tool") == 1
    assert _value(samples, requests, tool="none", outcome="unauthorized") == 1
    assert _value(samples, requests, tool="none", outcome="ok") >= 4  # initialize, tools/list
    count = "cpersona_mcp_request_duration_seconds_count"
    assert _value(samples, count, tool="list_memories", outcome="ok") == 1
    assert _value(samples, "cpersona_mcp_response_bytes_sum", tool="store", outcome="stored") > 0
    assert _value(samples, "cpersona_tenant_response_bytes_total", tenant="metered") > 0
    # slugs and counts only: no content, no agent ids, no keys, no attacker-chosen names
    for leaked in (SECRET, "secret-agent", key, "no_such_tool"):
        assert leaked not in exposition


async def test_bytes_counted_equal_the_bytes_the_client_received(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "exact")
    agent = Agent(served, await new_tenant(lib, "writer"))
    await agent.call("store", agent_id="a", message={"content": "emoji \U0001f9e0 and 記憶"})
    # A fresh tenant, one raw request: its counter must equal the body the client read.
    response = await _post(served, key, _tool_call("list_memories"))
    assert response.status_code == 200
    received = len(response.content)
    _, samples = await _scrape(served)
    assert _value(samples, "cpersona_tenant_response_bytes_total", tenant="exact") == received
    before = _value(samples, "cpersona_mcp_response_bytes_sum", tool="list_memories", outcome="ok")
    assert before == received
    again = await _post(served, key, _tool_call("list_memories", '{"agent_id":"a"}'))
    _, samples = await _scrape(served)
    total = received + len(again.content)
    assert _value(samples, "cpersona_tenant_response_bytes_total", tenant="exact") == total


async def test_metrics_can_be_disabled(settings: Settings, database_url: str) -> None:
    quiet = dataclasses.replace(settings, metrics_enabled=False)
    async with serve(quiet, database_url) as served, httpx.AsyncClient() as http:
        response = await http.get(f"{served.base_url}/metrics")
    assert response.status_code == 404


def test_each_app_has_its_own_registry(settings: Settings) -> None:
    """Two apps in one process neither collide on nor share the global registry."""
    first = create_app(settings, "postgresql://unused/db")
    create_app(settings, "postgresql://unused/db")  # a shared registry would raise here
    assert "/metrics" in {getattr(route, "path", None) for route in first.routes}
    assert b"cpersona_" not in generate_latest(REGISTRY)
