"""Input bounds over MCP (issue 36, finding 1): every free-text input has a documented cap,
a too-long one gets a short, clear validation error at once, and one tenant's failing
query embeddings cannot open the embedding circuit breaker every tenant shares.

Before: ``recall``'s ``query`` took anything up to the 4 MB body cap; a 624 KB query
tied up the embedder, queries over ~700 KB answered "internal error" with a traceback
logged per call, and three failed query embeddings of one tenant put every tenant's
recall into the lexical-only ``fault`` advisory.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import Settings
from service.mcp.tools import TOOL_ORDER
from service.memory import bounds
from service.memory.library import Library
from tests.e2e.test_embedder_faults import fault_settings
from tests.servers.embedding import EmbeddingServer, running_server
from tests.support import Agent, mcp_session, new_tenant, serve, text

HUGE_QUERY = "needle " * 90_000  # 630,000 characters, the 624 KB
TOOLS_WITH_WRITE_TEXT = {
    # spec: texts over the write cap are truncated (``truncated: true``), not refused
    ("store", "content"),  # the top-level form of message.content (CPersona 2.6)
    ("store", "message.content"),
    ("update_memory", "content"),
    ("archive_episode", "summary"),
    ("archive_episode", "keywords"),
    ("update_profile", "profile"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=384)


@pytest.fixture
def provider(server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    server.reset()
    yield server
    server.reset()


def _logged_failures(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Log lines of failed tool calls or tracebacks (the service logs to stdout/stderr)."""
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    return [line for line in lines if "tool_failed" in line or "Traceback" in line]


@pytest.mark.parametrize("tool", ["recall", "recall_with_context"])
async def test_a_600_kb_query_is_refused_at_once_with_a_short_clear_error(
    client: Agent, tool: str, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    result = await client.raw(tool, {"agent_id": "a", "query": HUGE_QUERY})
    elapsed = time.monotonic() - started
    assert result.is_error
    message = text(result)
    assert message == (
        f"Input validation error: query is too long ({len(HUGE_QUERY)} characters, "
        f"max {bounds.QUERY_CHARS})"
    )
    assert elapsed < 2.0
    assert _logged_failures(capsys) == []


async def test_a_query_at_the_cap_is_answered(client: Agent) -> None:
    body = await client.call("recall", agent_id="a", query="q" * bounds.QUERY_CHARS)
    assert body["messages"] == []


async def test_recall_with_context_bounds_its_turns(client: Agent) -> None:
    turns = [{"role": "user", "content": "hi"}] * (bounds.LIST_ITEMS + 1)
    many = await client.raw(
        "recall_with_context", {"agent_id": "a", "query": "q", "external_context": turns}
    )
    assert text(many) == (
        f"Input validation error: external_context is too long ({bounds.LIST_ITEMS + 1} items, "
        f"max {bounds.LIST_ITEMS})"
    )
    long_turn = [{"role": "user", "content": "x" * (bounds.QUERY_CHARS + 1)}]
    one = await client.raw(
        "recall_with_context", {"agent_id": "a", "query": "q", "external_context": long_turn}
    )
    assert text(one).startswith("Input validation error: external_context/0/content is too long")
    excluded = ["x" * (bounds.QUERY_CHARS + 1)]
    more = await client.raw("recall", {"agent_id": "a", "query": "q", "exclude_contents": excluded})
    assert text(more).startswith("Input validation error: exclude_contents/0 is too long")


def _string_nodes(name: str, node: Any, path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return
    if node.get("type") in ("string", "array"):
        yield name, path, node
    for key, child in node.get("properties", {}).items():
        yield from _string_nodes(name, child, key if not path else f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        yield from _string_nodes(name, node["items"], f"{path}[]")


async def test_every_free_text_input_of_every_tool_is_bounded_in_its_schema(
    client: Agent,
) -> None:
    async with mcp_session(client.served, client.key) as session:
        tools = (await session.list_tools()).tools
    assert {tool.name for tool in tools} == set(TOOL_ORDER)  # the whole catalogue
    unbounded = []
    for tool in tools:
        for name, path, node in _string_nodes(tool.name, tool.input_schema, ""):
            if (name, path) in TOOLS_WITH_WRITE_TEXT and node["type"] == "string":
                continue
            bounded = "enum" in node or "maxLength" in node or "maxItems" in node
            if not bounded:
                unbounded.append(f"{name}.{path}: {json.dumps(node)}")
    assert unbounded == []


async def test_one_tenants_failing_queries_leave_other_tenants_recall_healthy(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    """The embedding server refuses texts starting ``!poison`` (HTTP 400): tenant ``abuser``
    sends many such queries, past the breaker's threshold (3 here); ``victim``'s recall
    still embeds its query and gets no lexical-only advisory."""
    # a long cooldown: the victim's recall comes while a shared circuit would be open
    slow = dataclasses.replace(
        fault_settings(settings, provider), embedding_breaker_cooldown_secs=60
    )
    async with serve(slow, database_url) as served:
        abuser = Agent(served, await new_tenant(lib, "abuser"))
        victim = Agent(served, await new_tenant(lib, "victim"))
        stored = await victim.call("store", agent_id="a", message={"content": "kiwi notes"})
        assert stored["result"] == "stored"
        for n in range(8):
            poisoned = await abuser.call("recall", agent_id="a", query=f"!poison {n}")
            assert poisoned["advisory"]["severity"] == "fault"
        found = await victim.call("recall", agent_id="a", query="kiwi")
        assert "advisory" not in found, found
        assert "kiwi" in provider.received
        # the abuser's own circuit is open: its next query does not reach the provider
        provider.received.clear()
        await abuser.call("recall", agent_id="a", query="!poison again")
        assert "!poison again" not in provider.received


async def test_one_tenants_refused_writes_leave_other_tenants_embedding(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    """Writes embed for their tenant too: ``abuser`` stores texts the provider refuses
    (HTTP 400) past the breaker's threshold (3), inline and again in the app's queue
    worker; ``victim``'s write is still embedded inline and its recall gets no
    lexical-only advisory (a shared circuit would stay open for the 60 s cooldown)."""
    slow = dataclasses.replace(
        fault_settings(settings, provider), embedding_breaker_cooldown_secs=60
    )
    async with serve(slow, database_url) as served:
        abuser = Agent(served, await new_tenant(lib, "abuser"))
        victim = Agent(served, await new_tenant(lib, "victim"))
        for n in range(8):
            poisoned = await abuser.call("store", agent_id="a", message={"content": f"!poison {n}"})
            assert (poisoned["result"], poisoned["embedded"]) == ("stored", False)
        stored = await victim.call("store", agent_id="a", message={"content": "kiwi notes"})
        assert (stored["result"], stored["embedded"]) == ("stored", True), stored
        found = await victim.call("recall", agent_id="a", query="kiwi")
        assert "advisory" not in found, found
        # the abuser's own circuit is open: its next write does not reach the provider
        provider.received.clear()
        later = await abuser.call("store", agent_id="a", message={"content": "!poison later"})
        assert later["embedded"] is False
        assert "!poison later" not in provider.received
