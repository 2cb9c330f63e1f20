"""reconstruct over MCP/HTTP (docs/tools.md, "reconstruct"): CPersona 2.6's acceptance
behaviours 4-8, 10-19 and 21-24, and the isolation and bounds around them."""

from __future__ import annotations

from typing import Any

from tests.support import Agent


async def _memory(client: Agent, content: str, agent: str = "a", **message: Any) -> int:
    stored = await client.call("store", agent_id=agent, message={"content": content, **message})
    assert stored["result"] == "stored", stored
    return int(stored["id"])


async def _reconstruct(client: Agent, query: str, agent: str = "a", **arguments: Any) -> Any:
    return await client.call("reconstruct", agent_id=agent, query=query, **arguments)


async def test_04_an_empty_query_returns_recent_memories_most_recent_first(
    client: Agent,
) -> None:
    first = await _memory(client, "the oldest note", timestamp="2026-03-01T10:00:00Z")
    second = await _memory(client, "a newer note", timestamp="2026-03-02T10:00:00Z")
    third = await _memory(client, "the newest note", timestamp="2026-03-03T10:00:00Z")
    answer = await _reconstruct(client, "", count=2)
    assert [item["head_ref"] for item in answer["items"]] == [f"mem:{third}", f"mem:{second}"]
    assert all(len(item["claims"]) == 1 for item in answer["items"])
    assert "shortfall_reason" not in answer
    assert answer["returned_count"] == 2
    assert f"mem:{first}" not in str(answer)
