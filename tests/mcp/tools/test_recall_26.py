"""CPersona 2.6's changed recall behaviours that our default ranking already has
(docs/tools.md, "Differences from CPersona")."""

from __future__ import annotations

from tests.support import Agent


async def test_a_lone_word_match_in_a_two_memory_pool_is_returned_without_deep(
    client: Agent,
) -> None:
    """Acceptance 48: the default gate (``hybrid``) keeps every row sharing a word with the
    query, so the one match of a tiny pool comes back; 2.5's rrf gate dropped it."""
    await client.call("store", agent_id="a", content="The deploy key rotates every Monday")
    await client.call("store", agent_id="a", content="Lunch is at noon")
    body = await client.call("recall", agent_id="a", query="deploy")
    assert [row["content"] for row in body["messages"]] == ["The deploy key rotates every Monday"]
