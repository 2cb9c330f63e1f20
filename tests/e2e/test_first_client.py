"""End to end over real HTTP with the official MCP client: the foundation's promises."""

from __future__ import annotations

from service.config import Settings
from service.mcp.server import CATALOGUE_TTL_MS
from service.memory.library import Library
from tests.support import body, mcp_session, modern_client, new_tenant, serve, text


async def test_client_initializes_lists_tools_and_round_trips_a_memory(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "acme")
    async with serve(settings, database_url) as served, mcp_session(served, key) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert names[:2] == ["store", "list_memories"] or "store" in names
        stored = body(
            await session.call_tool(
                "store", {"agent_id": "alpha", "message": {"content": "Ada likes tea", "id": "m1"}}
            )
        )
        assert stored == {"ok": True, "result": "stored", "id": stored["id"], "embedded": False}
        listed = body(await session.call_tool("list_memories", {"agent_id": "alpha"}))
    assert listed["count"] == 1
    row = listed["memories"][0]
    assert row["content"] == "Ada likes tea"
    assert row["agent_id"] == "alpha"
    assert row["id"] == stored["id"]
    assert "msg_id" not in row
    assert row["timestamp"].endswith("+00:00")


async def test_second_tenant_sees_nothing_of_the_first(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key_a = await new_tenant(lib, "tenant-a")
    key_b = await new_tenant(lib, "tenant-b")
    async with serve(settings, database_url) as served:
        async with mcp_session(served, key_a) as session:
            await session.call_tool("store", {"agent_id": "shared", "message": {"content": "A"}})
        async with mcp_session(served, key_b) as session:
            same_agent = body(await session.call_tool("list_memories", {"agent_id": "shared"}))
            everything = body(await session.call_tool("list_memories", {}))
            stored = body(
                await session.call_tool(
                    "store", {"agent_id": "shared", "message": {"content": "A"}}
                )
            )
    assert same_agent == {"memories": [], "count": 0}
    assert everything == {"memories": [], "count": 0}
    assert stored["result"] == "stored"


async def test_read_only_key_cannot_store(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "readers")
    from service.memory import tenants

    key = await tenants.create_key(lib.db, "readers", label="ro", grants={"*": "read"})
    async with serve(settings, database_url) as served, mcp_session(served, key) as session:
        denied = body(
            await session.call_tool("store", {"agent_id": "alpha", "message": {"content": "x"}})
        )
        listed = body(await session.call_tool("list_memories", {"agent_id": "alpha"}))
    assert denied == {
        "ok": False,
        "error": "permission_denied",
        "tool": "store",
        "agent_id": "alpha",
        "required": "read-write",
        "client_id": "ro",
        "result": "rejected",  # every store answer carries result (CPersona 2.6)
    }
    assert listed == {"memories": [], "count": 0}


async def test_unknown_tool_and_schema_errors_have_the_spec_shapes(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "shapes")
    async with serve(settings, database_url) as served, mcp_session(served, key) as session:
        unknown = await session.call_tool("no_such_tool", {})
        missing = await session.call_tool("get_contents", {"refs": ["mem:1"]})
        nul = await session.call_tool("store", {"agent_id": "a", "message": {"content": "a\x00b"}})
    assert unknown.is_error  # CPersona's bare body, flagged so clients see a failure
    assert body(unknown) == {"error": "Unknown tool: no_such_tool"}
    assert missing.is_error
    assert text(missing) == "Input validation error: 'agent_id' is a required property"
    refused = body(nul)
    assert refused["ok"] is False
    assert refused["result"] == "rejected"
    assert "NUL" in refused["reason"]


async def test_tools_list_carries_a_real_cache_lifetime(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "ttl")
    async with serve(settings, database_url) as served, modern_client(served, key) as client:
        listed = await client.list_tools(cache_mode="refresh")
    assert listed.ttl_ms == CATALOGUE_TTL_MS > 0
    assert listed.cache_scope == "private"
