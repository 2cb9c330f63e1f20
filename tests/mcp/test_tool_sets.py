"""Per-key tool sets over MCP/HTTP: an ``everyday`` key lists and may call only the
session memory tools; ``all`` (the default) keeps the whole catalogue."""

from __future__ import annotations

import json

import mcp_types as types

from service.mcp.tools import EVERYDAY, TOOL_ORDER
from service.memory.library import Library
from tests.support import Agent, Served, mcp_session, modern_client, new_tenant, text


async def test_an_everyday_key_lists_only_the_session_tools_in_spec_order(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "daily", tool_set="everyday")
    names = await Agent(served, key).tool_names()
    assert names == [name for name in TOOL_ORDER if name in EVERYDAY]
    assert len(names) == 18  # 15 + declare_associations, traverse and reconstruct (issue 32)
    assert {"store", "recall", "get_contents", "archive_episode"} <= set(names)
    assert not {"check_health", "export_memories", "delete_agent_data"} & set(names)


async def test_a_key_of_the_default_set_lists_every_tool(lib: Library, served: Served) -> None:
    key = await new_tenant(lib, "admin")
    assert await Agent(served, key).tool_names() == list(TOOL_ORDER)


async def test_an_everyday_key_is_refused_a_tool_outside_its_set_with_a_clear_error(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "daily", tool_set="everyday")
    agent = Agent(served, key)
    stored = await agent.call("store", agent_id="a", message={"content": "kept"})
    assert stored["result"] == "stored"
    refused = await agent.raw("delete_agent_data", {"agent_id": "a"})
    assert refused.is_error is True
    answer = json.loads(text(refused))
    assert answer["tool"] == "delete_agent_data"
    assert answer["tool_set"] == "everyday"
    assert "not in this key's tool set" in answer["error"]
    listed = await agent.call("list_memories", agent_id="a")
    assert [row["content"] for row in listed["memories"]] == ["kept"]


async def test_the_modern_era_sees_the_same_tool_set(lib: Library, served: Served) -> None:
    key = await new_tenant(lib, "daily", tool_set="everyday")
    async with modern_client(served, key) as client:
        listed = await client.list_tools()
        refused = await client.call_tool("check_health", {})
    assert {tool.name for tool in listed.tools} == EVERYDAY
    assert refused.is_error is True
    item = refused.content[0]
    assert isinstance(item, types.TextContent)
    assert "tool set" in item.text


async def test_an_unknown_tool_is_still_unknown_for_an_everyday_key(
    lib: Library, served: Served
) -> None:
    key = await new_tenant(lib, "daily", tool_set="everyday")
    async with mcp_session(served, key) as session:
        result = await session.call_tool("nope", {})
    assert result.is_error is True
    assert json.loads(text(result)) == {"error": "Unknown tool: nope"}
