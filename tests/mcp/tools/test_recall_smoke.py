"""Recall over MCP/HTTP, lexical mode: the basic contract."""

from __future__ import annotations

from tests.support import Agent


async def test_recall_finds_a_stored_memory_with_deep(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "Ada likes green tea", "id": "m1"})
    await client.call("store", agent_id="a", message={"content": "Bob plays the cello"})
    body = await client.call("recall", agent_id="a", query="green tea", deep=True)
    contents = [m["content"] for m in body["messages"]]
    assert contents[-1] == "Ada likes green tea"
    best = body["messages"][-1]
    assert best["ref"].startswith("mem:")
    assert best["id"] == "m1"
    assert best["match_reason"]["signal"] == "hybrid"  # the default fusion since issue 9
    assert body["advisory"]["severity"] == "hint"
