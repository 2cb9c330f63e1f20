"""Daily usage per tenant and tool: counted per request, flushed to usage_daily."""

from __future__ import annotations

import math

from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, mcp_session, new_tenant, serve, text


async def test_usage_counts_calls_bytes_and_characters_saved_by_previews(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served:
        client = Agent(served, await new_tenant(lib, "usage"))
        await client.call("store", agent_id="a", message={"content": "fig " + "f" * 1500})
        async with mcp_session(served, client.key) as session:
            answer = await session.call_tool(
                "recall", {"agent_id": "a", "query": "fig", "deep": True}
            )
        await client.raw("store", {"message": {}})  # a schema error counts as a failure
    async with lib.db.admin_tx() as conn:  # the final flush ran at shutdown
        rows = {r["tool"]: dict(r) for r in await conn.fetch("SELECT * FROM usage_daily")}
        ops = await conn.fetch("SELECT * FROM ops.usage_daily")
    assert rows["store"]["calls"] == 2
    assert rows["store"]["failures"] == 1
    assert rows["recall"]["calls"] == 1
    assert rows["recall"]["chars_returned"] == 500
    assert rows["recall"]["chars_saved"] == 1004
    assert rows["recall"]["bytes_out"] > 500
    assert rows["recall"]["tokens_delivered"] == math.ceil(len(text(answer)) / 4)
    # the match is inside the preview: no excerpt, the preview held back the rest
    assert rows["recall"]["tokens_saved_previews"] == math.ceil(1504 / 4) - math.ceil(500 / 4)
    assert rows["recall"]["tokens_saved_excerpts"] == 0
    assert rows["store"]["tokens_delivered"] > 0
    assert len(ops) == len(rows)
    assert {r["tokens_delivered"] for r in ops} == {r["tokens_delivered"] for r in rows.values()}


async def test_unknown_tool_names_are_counted_under_one_name(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """Issue 36, finding 10: every unknown name made a row of its own (without bound)
    and reached the operator's terminal raw; now all are counted as ``unknown``."""
    names = ["no_such_tool", "evil\x1b[31m\r\nforged line", "x" * 100, "nope-2"]
    async with serve(settings, database_url) as served:
        client = Agent(served, await new_tenant(lib, "unknowns"))
        for name in names:
            assert (await client.raw(name, {})).is_error
        await client.call("store", agent_id="a", message={"content": "a real call"})
    async with lib.db.admin_tx() as conn:
        rows = {r["tool"]: dict(r) for r in await conn.fetch("SELECT * FROM usage_daily")}
    assert set(rows) == {"unknown", "store"}
    assert (rows["unknown"]["calls"], rows["unknown"]["failures"]) == (len(names), len(names))
    assert rows["store"]["calls"] == 1
