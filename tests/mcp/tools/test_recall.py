"""recall over MCP/HTTP with embeddings off: (docs/tools.md, "How recall works"), acceptance 21-45
(the recall ones)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, Served, new_tenant, serve


@pytest.fixture
async def rrf_client(lib: Library, settings: Settings, database_url: str) -> AsyncIterator[Agent]:
    """A client of a service pinned to the spec's rrf mode (the default is hybrid): the
    tests that take it check rrf's own semantics (scores 1/(K+r+1), the pool-size gate)."""
    async with serve(dataclasses.replace(settings, recall_mode="rrf"), database_url) as served:
        yield Agent(served, await new_tenant(lib, "acme-rrf"))


async def _store(client: Agent, content: str, agent: str = "a", **extra: Any) -> int:
    body = await client.call(
        "store", agent_id=agent, message={"content": content, **extra.pop("message", {})}, **extra
    )
    assert body["result"] == "stored", body
    return int(body["id"])


async def _recall(client: Agent, query: str, **args: Any) -> list[dict[str, Any]]:
    body = await client.call("recall", agent_id=args.pop("agent_id", "a"), query=query, **args)
    messages: list[dict[str, Any]] = body["messages"]
    return messages


async def test_refs_kinds_and_msg_ids(client: Agent) -> None:
    mem = await _store(client, "kiwi orchard notes", message={"id": "note-1"})
    await _store(client, "kiwi harvest plan")
    episode = await client.call("archive_episode", agent_id="a", summary="kiwi session recap")
    rows = await _recall(client, "kiwi", deep=True)
    by_ref = {row["ref"]: row for row in rows}
    assert by_ref[f"mem:{mem}"]["id"] == "note-1"
    assert all("id" not in row for ref, row in by_ref.items() if ref != f"mem:{mem}")
    ep = by_ref[f"ep:{episode['episode_id']}"]
    assert ep["content"] == "[Episode] kiwi session recap"
    assert "source" not in ep  # compact rows: an episode's fixed source is its ep: ref


async def test_rrf_scores_ascend_and_a_lone_match_scores_one_over_61(rrf_client: Agent) -> None:
    client = rrf_client
    for i in range(5):
        await _store(client, f"walnut {'walnut ' * i}tree {i}")
    rows = await _recall(client, "walnut", deep=True)
    scores = [row["match_reason"]["score"] for row in rows]
    assert scores == sorted(scores)
    assert all(row["match_reason"]["signal"] == "rrf" for row in rows)
    # compact rows: 4 significant digits, and rrf is not repeated next to its equal score
    assert rows[-1]["match_reason"] == {"signal": "rrf", "score": 0.01639}
    assert math.isclose(rows[-1]["match_reason"]["score"], 1 / 61, rel_tol=1e-3)


async def test_small_pool_gate_drops_a_lone_match_unless_deep(rrf_client: Agent) -> None:
    client = rrf_client
    await _store(client, "the pelican flew")
    await _store(client, "unrelated words")
    assert await _recall(client, "pelican") == []
    assert [row["content"] for row in await _recall(client, "pelican", deep=True)] == [
        "the pelican flew"
    ]


async def test_empty_query_lists_recent_memories_without_match_reason(client: Agent) -> None:
    for i in range(3):
        await _store(client, f"memory number {i}")
    rows = await _recall(client, "")
    assert [row["content"] for row in rows] == [f"memory number {i}" for i in range(3)]
    assert all("match_reason" not in row for row in rows)


async def test_advisory_long_once_then_short(client: Agent) -> None:
    first = await client.call("recall", agent_id="a", query="x")
    second = await client.call("recall", agent_id="a", query="y")
    assert first["advisory"]["severity"] == "hint"
    assert "Notify the user" in first["advisory"]["runbook"]
    assert "Notify the user" not in second["advisory"]["runbook"]
    assert "gate_fallback" not in first


async def test_advisory_can_be_switched_off(lib: Library, database_url: str) -> None:
    quiet = Settings(degraded_advisory=False)
    async with serve(quiet, database_url) as served:
        client = Agent(served, await new_tenant(lib, "quiet"))
        body = await client.call("recall", agent_id="a", query="x")
    assert "advisory" not in body


async def test_profile_needs_a_pool_of_50_and_then_comes_first(client: Agent) -> None:
    await client.call("update_profile", agent_id="a", profile="prefers brevity")
    for i in range(5):
        await _store(client, f"grape fact {i}")
    small = await _recall(client, "grape", deep=True)
    assert all(row.get("source") != {"System": "profile"} for row in small)
    for i in range(5, 50):
        await _store(client, f"grape fact {i}")
    rows = await _recall(client, "grape", limit=100, deep=True)
    assert rows[0]["content"] == "[Profile] prefers brevity"
    assert rows[0]["source"] == {"System": "profile"}
    assert "ref" not in rows[0]


async def test_episode_boundary_penalises_older_memories(rrf_client: Agent) -> None:
    client = rrf_client
    await _store(client, "quokka sighting", message={"timestamp": "2020-01-01T00:00:00+00:00"})
    for i in range(35):  # a pool over 31 lets a factor-0.5 rank-0 row pass the deep gate
        await _store(client, f"filler {i}")
    await client.call("archive_episode", agent_id="a", summary="later session")
    (row,) = [r for r in await _recall(client, "quokka", deep=True) if "ref" in r]
    assert math.isclose(row["match_reason"]["score"], 0.5 / 61, rel_tol=1e-3)


async def test_channel_project_and_source_axes(client: Agent) -> None:
    await _store(client, "axis item c1", channel="c1")
    await _store(client, "axis item c2", channel="c2")
    await _store(client, "axis item none")
    await _store(client, "axis item in X", project_id="X")
    await _store(client, "axis item from bob", message={"source": {"type": "User", "id": "bob-1"}})
    await client.call("archive_episode", agent_id="a", summary="axis episode", channel="c2")

    async def contents(**args: Any) -> set[str]:
        return {row["content"] for row in await _recall(client, "axis item", deep=True, **args)}

    assert "axis item c1" not in await contents(channel="c2")
    assert {"axis item c2", "axis item none"} <= await contents(channel="c2")
    assert "axis item in X" not in await contents(project_id="")
    assert "axis item in X" in await contents(project_id="X")
    assert "axis item in X" in await contents()
    with_source = await contents(source_id="bob")
    assert with_source == {"axis item from bob"}
    assert "[Episode] axis episode" in await contents(source_id="zzz", channel="c2")


async def test_empty_agent_never_sees_other_agents(client: Agent) -> None:
    await _store(client, "private berry", agent="someone")
    assert await _recall(client, "berry", agent_id="", deep=True) == []


async def test_limit_bounds_and_zero(client: Agent) -> None:
    assert (await client.raw("recall", {"agent_id": "a", "query": "q", "limit": 101})).is_error
    assert (await client.raw("recall", {"agent_id": "a", "query": "q", "limit": -1})).is_error
    body = await client.call("recall", agent_id="a", query="q", limit=0)
    assert body["messages"] == []


async def test_preview_markers_and_pure_prefix(client: Agent) -> None:
    long_text = "mango " + "m" * 1473
    exact = "mango " + "n" * 494
    await _store(client, long_text)
    await _store(client, exact)
    rows = {row["content"][:7]: row for row in await _recall(client, "mango", deep=True)}
    long_row, exact_row = rows["mango m"], rows["mango n"]
    assert long_row["content"] == long_text[:500]
    assert long_row["content_truncated"] is True
    assert long_row["content_len"] == 1479
    assert exact_row["content"] == exact
    assert "content_truncated" not in exact_row
    assert "content_len" not in exact_row
    again = await _recall(client, "mango", deep=True, exclude_contents=[long_row["content"]])
    assert all(row["content"] != long_text[:500] for row in again)


async def test_exclusion_floor_and_reverse_prefix(client: Agent) -> None:
    await _store(client, "filler memory number 1 about gardening and more")
    await _store(client, "Filler Memory Number 1")
    await _store(client, "the")
    kept = await _recall(client, "filler", deep=True, exclude_contents=["filler memory number 1"])
    assert [row["content"] for row in kept] == ["filler memory number 1 about gardening and more"]
    gone = await _recall(
        client, "filler", deep=True, exclude_contents=["  filler memory NUMBER 1 "]
    )
    assert "Filler Memory Number 1" not in [row["content"] for row in gone]
    assert any(r["content"] == "the" for r in await _recall(client, "the", deep=True))
    long_entry = "the quick brown fox jumps over the lazy dog"
    rows = await _recall(client, "the", deep=True, exclude_contents=[long_entry])
    assert all(row["content"] != "the" for row in rows)


async def test_full_content_budget(client: Agent) -> None:
    for i in range(20):
        await _store(client, f"papaya {i:02d} " + chr(0x61 + i) * 15_990)
    rows_body = await client.call(
        "recall", agent_id="a", query="papaya", limit=20, deep=True, full_content=True
    )
    rows = rows_body["messages"]
    assert len(rows) == 20
    assert rows_body["full_content_budget_chars"] == 200_000
    assert all("content_truncated" not in row for row in rows[-12:])
    assert all(len(row["content"]) == 16_000 for row in rows[-12:])
    assert all(row["content_truncated"] and len(row["content"]) == 500 for row in rows[:8])
    small = await client.call(
        "recall", agent_id="a", query="papaya", limit=3, deep=True, full_content=True
    )
    assert "full_content_budget_chars" not in small
    assert all(len(row["content"]) == 16_000 for row in small["messages"])


async def test_preview_zero_disables_trimming(lib: Library, database_url: str) -> None:
    async with serve(Settings(recall_preview_chars=0), database_url) as served:
        client = Agent(served, await new_tenant(lib, "full"))
        await _store(client, "plum " + "p" * 3000)
        body = await client.call("recall", agent_id="a", query="plum", deep=True, full_content=True)
    (row,) = body["messages"]
    assert len(row["content"]) == 3005
    assert "content_truncated" not in row
    assert "full_content_budget_chars" not in body


async def test_recall_with_context_merges_echoes(client: Agent) -> None:
    await _store(client, "lime pie recipe", message={"timestamp": "2026-01-01T00:00:00+00:00"})
    await _store(client, "lime grove trip", message={"timestamp": "2026-02-01T00:00:00+00:00"})
    external = [
        {
            "role": "user",
            "content": "what about lime?",
            "name": "bob",
            "user_id": "42",
            "timestamp": "2026-01-15T00:00:00+00:00",
        },
        {"role": "assistant", "content": "  " + "x" * 700 + "  ", "timestamp": "2027-01-01"},
        {"role": "system", "content": "lime grove trip"},
        {"role": "user", "content": "anonymous"},
        "not a dict",
    ]
    body = await client.call(
        "recall_with_context", agent_id="a", query="lime", deep=True, external_context=external
    )
    rows = body["messages"]
    stamps = [row.get("timestamp", "") for row in rows]
    assert stamps == sorted(stamps)
    assert rows[-1]["source"] == {"type": "Agent", "id": "self"}
    assert rows[-1]["content"] == "x" * 500
    assert rows[-1]["content_truncated"] is True
    assert "ref" not in rows[-1]
    bob = next(r for r in rows if r.get("context_type") and r["content"] == "what about lime?")
    assert bob["source"] == {"type": "User", "id": "discord:42", "name": "bob"}
    anon = next(r for r in rows if r["content"] == "anonymous")
    assert anon["source"] == {"type": "User", "id": "discord:User", "name": "User"}
    assert "lime grove trip" not in [r["content"] for r in rows]
    assert body["context_filter_only"]["roles"] == ["system"]


async def test_recall_is_confined_to_the_tenant(lib: Library, served: Served) -> None:
    a = Agent(served, await new_tenant(lib, "ra"))
    b = Agent(served, await new_tenant(lib, "rb"))
    await _store(a, "secret durian")
    assert await _recall(b, "durian", deep=True) == []


async def test_common_words_alone_still_find_rows(client: Agent) -> None:
    """A word in most rows is not a candidate word, but it must not empty the answer."""
    for i in range(12):
        await _store(client, f"Caroline: note {i} about her day")
    await _store(client, "Melanie: painted a lake")
    rows = await _recall(client, "What is Caroline's relationship status?", deep=True)
    assert rows
    assert all(row["content"].startswith("Caroline") for row in rows if "ref" in row)
