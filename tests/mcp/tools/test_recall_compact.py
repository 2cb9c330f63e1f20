"""Compact rows and excerpts over MCP/HTTP (issue 13, points 1 and 2), with the seed's
preview contract still holding: pure prefix, markers only when trimmed, and a preview fed
back in exclude_contents still suppressing its row."""

from __future__ import annotations

import json
from typing import Any

from service.memory import tenants
from service.memory.library import Library
from tests.seeds import new_seed
from tests.support import Agent, Served, mcp_session, new_tenant, text

CHAT = "Ann: we talked about the weather and what to cook tonight.\n" * 14  # ~ 830 chars
BEYOND = CHAT + "Bob: I finally adopted a greyhound called Pixel in March.\n" + CHAT
INSIDE = "Bob: the greyhound Pixel sleeps all day.\n" + CHAT + "Bob: greyhound walks.\n"


async def _recall(client: Agent, query: str, **args: Any) -> list[dict[str, Any]]:
    body = await client.call("recall", agent_id="a", query=query, deep=True, **args)
    rows: list[dict[str, Any]] = body["messages"]
    return rows


async def test_a_default_row_carries_no_empty_field_and_no_score_twice(client: Agent) -> None:
    stored = await client.call("store", agent_id="a", message={"content": "greyhound facts"})
    (row,) = await _recall(client, "greyhound")
    assert set(row) == {"ref", "content", "timestamp", "match_reason"}
    assert row["ref"] == f"mem:{stored['id']}"
    assert row["match_reason"]["signal"] == "hybrid"
    assert set(row["match_reason"]) == {"signal", "score"}
    assert len(repr(row["match_reason"]["score"])) <= len("0.01639")


async def test_the_timestamp_and_msg_id_are_returned_as_given(client: Agent) -> None:
    message = {"content": "greyhound race", "timestamp": "8:56 pm on 8 May, 2023", "id": "D1:3"}
    await client.call("store", agent_id="a", message=message)
    (row,) = await _recall(client, "greyhound")
    assert (row["timestamp"], row["id"]) == ("8:56 pm on 8 May, 2023", "D1:3")


async def test_the_answer_text_is_compact_json_that_any_parser_reads(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "greyhound facts"})
    async with mcp_session(client.served, client.key) as session:
        arguments = {"agent_id": "a", "query": "greyhound", "deep": True}
        result = await session.call_tool("recall", arguments)
    raw = text(result)
    assert '", "' not in raw
    assert '": ' not in raw
    assert json.loads(raw)["messages"][0]["content"] == "greyhound facts"


async def test_a_row_matching_beyond_its_preview_gets_an_excerpt_of_the_full_text(
    lib: Library, served: Served
) -> None:
    client, beyond = await _with_chat(lib, served)
    inside = await client.call("store", agent_id="a", message={"content": INSIDE})
    inside = inside["id"]
    rows = {row["ref"]: row for row in await _recall(client, "When did Bob adopt Pixel?")}
    far, near = rows[f"mem:{beyond}"], rows[f"mem:{inside}"]
    assert far["content"] == BEYOND[:500]
    assert far["content_len"] == len(BEYOND)
    start = far["excerpt_offset"]
    assert BEYOND[start : start + len(far["excerpt"])] == far["excerpt"]
    assert far["excerpt"].startswith("Bob: I finally adopted a greyhound called Pixel")
    assert len(far["excerpt"]) <= 240
    assert near["content_truncated"] is True
    assert "excerpt" not in near
    assert "excerpt_offset" not in near  # its match is in the preview
    whole = await _recall(client, "When did Bob adopt Pixel?", full_content=True)
    assert all("excerpt" not in row for row in whole)


async def test_a_preview_with_an_excerpt_fed_back_still_suppresses_its_row(
    lib: Library, served: Served
) -> None:
    client, beyond = await _with_chat(lib, served)
    (row,) = [r for r in await _recall(client, "Pixel") if r["ref"] == f"mem:{beyond}"]
    assert "excerpt" in row
    again = await _recall(client, "Pixel", exclude_contents=[row["content"]])
    assert all(r.get("ref") != f"mem:{beyond}" for r in again)
    excerpt_only = await _recall(client, "Pixel", exclude_contents=[row["excerpt"]])
    assert any(r.get("ref") == f"mem:{beyond}" for r in excerpt_only)  # not a prefix


async def test_recall_with_context_rows_are_compact_and_get_excerpts_too(
    lib: Library, served: Served
) -> None:
    client, beyond = await _with_chat(lib, served)
    body = await client.call(
        "recall_with_context", agent_id="a", query="Pixel", deep=True,
        external_context=[{"role": "user", "content": "Pixel?"}],
    )  # fmt: skip
    (row,) = [r for r in body["messages"] if r.get("ref") == f"mem:{beyond}"]
    assert "source" not in row
    assert "excerpt" in row


async def test_other_tenants_stay_apart_with_compact_rows(lib: Library, served: Served) -> None:
    mine = Agent(served, await new_tenant(lib, "mine"))
    theirs = Agent(served, await new_tenant(lib, "theirs"))
    await mine.call("store", agent_id="a", message={"content": "greyhound secret"})
    assert await _recall(theirs, "greyhound") == []


async def _with_chat(lib: Library, served: Served) -> tuple[Agent, int]:
    """A client of a fresh tenant whose agent holds BEYOND; and BEYOND's id."""
    seed = await new_seed(lib, "excerpts")
    client = Agent(served, await tenants.create_key(lib.db, "excerpts", label="compact"))
    return client, await seed.memory(BEYOND)
