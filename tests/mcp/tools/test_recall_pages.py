"""recall's token budget and resumable cursor over MCP/HTTP (issue 13, point 3)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from service.config import Settings
from service.mcp.shaping.tokens import render
from service.memory import tenants
from service.memory.library import Library
from tests.seeds import Seed, new_seed
from tests.support import Agent, Served, serve

WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "heron")


def _text(i: int) -> str:
    """A memory about 'lantern' whose length and wording vary with ``i`` (some over 500)."""
    body = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(10 + (i * 37) % 140))
    return f"lantern note {i} {'lantern ' * (i % 5)}{body}"


async def _tenant(lib: Library, served: Served, slug: str) -> tuple[Agent, Seed]:
    """A tenant with a key: its MCP client and a seed to write rows fast."""
    seed = await new_seed(lib, slug)
    return Agent(served, await tenants.create_key(lib.db, slug, label="pages")), seed


async def _fill(seed: Seed, count: int, agent: str = "a", filler: int = 0) -> None:
    """``count`` lantern notes and ``filler`` unrelated rows (a larger pool lowers the
    gate, so that deep recall returns every lantern note)."""
    for i in range(count):
        await seed.memory(_text(i), agent=agent)
    for i in range(filler):
        await seed.memory(f"filler row {i} about moss", agent=agent)


def _tokens(rows: list[dict[str, Any]]) -> int:
    return sum(math.ceil(len(render(row)) / 4) + 1 for row in rows)


async def _pages(client: Agent, budget: int, **args: Any) -> list[dict[str, Any]]:
    """Every page of one budgeted recall, following next_cursor (bounded)."""
    call = {"agent_id": "a", "query": "lantern", "limit": 100, "deep": True, **args}
    pages = [await client.call("recall", **call, max_tokens=budget)]
    while "next_cursor" in pages[-1]:
        assert len(pages) < 200, "the cursor never ran out"
        pages.append(await client.call("recall", **call, cursor=pages[-1]["next_cursor"]))
    return pages


async def _first_page(client: Agent, agent: str = "a") -> dict[str, Any]:
    """The first page of a 20-row recall in a budget that leaves rows out."""
    page: dict[str, Any] = await client.call(
        "recall", agent_id=agent, query="lantern", limit=20, deep=True, max_tokens=200
    )
    assert "next_cursor" in page
    return page


def _best_first(rows: list[dict[str, Any]]) -> list[str]:
    return [row["ref"] for row in reversed(rows)]


async def test_paging_100_rows_in_500_token_budgets_loses_and_repeats_nothing(
    lib: Library, served: Served
) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 100, filler=400)
    whole = await client.call("recall", agent_id="a", query="lantern", limit=100, deep=True)
    assert len(whole["messages"]) == 100
    pages = await _pages(client, 500)
    delivered = [ref for page in pages for ref in _best_first(page["messages"])]
    assert delivered == _best_first(whole["messages"])  # same ranking, none twice, none lost
    assert len(pages) > 5
    for page in pages:
        rows = page["messages"]
        assert rows, "every page carries at least its best row"
        assert len(rows) == 1 or _tokens(rows) <= 500
        assert all(row.get("content_truncated") or len(row["content"]) <= 500 for row in rows)
    by_ref = {row["ref"]: row for row in whole["messages"]}
    for page in pages[1:]:  # resumed rows: shaped like the first answer's, without scores
        for row in page["messages"]:
            assert row["content"] == by_ref[row["ref"]]["content"]
            assert "match_reason" not in row


async def test_the_best_row_always_comes_even_when_it_alone_exceeds_the_budget(
    lib: Library, served: Served
) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 12)
    long_text = "lantern lantern lantern " + "x" * 3000
    await seed.memory(long_text)
    full = await client.call(
        "recall", agent_id="a", query="lantern", limit=5, deep=True, full_content=True
    )
    assert full["messages"][-1]["content"] == long_text
    tight = await client.call(
        "recall", agent_id="a", query="lantern", limit=5, deep=True, full_content=True,
        max_tokens=20,
    )  # fmt: skip
    (best,) = tight["messages"]
    assert best["ref"] == full["messages"][-1]["ref"]
    assert best["content"] == long_text[:500]  # degraded to its preview
    assert best["content_len"] == len(long_text)
    assert "next_cursor" in tight


async def test_without_rows_left_out_there_is_no_cursor(lib: Library, served: Served) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 3)
    body = await client.call("recall", agent_id="a", query="lantern", deep=True, max_tokens=5000)
    assert len(body["messages"]) == 3
    assert "next_cursor" not in body


async def test_a_resumed_page_keeps_full_content_and_takes_a_new_budget(
    lib: Library, served: Served
) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 30, filler=100)
    first = await client.call(
        "recall", agent_id="a", query="lantern", limit=30, deep=True, full_content=True,
        max_tokens=300,
    )  # fmt: skip
    second = await client.call(
        "recall", agent_id="a", query="lantern", cursor=first["next_cursor"], max_tokens=100000
    )
    assert "next_cursor" not in second
    assert all("content_truncated" not in row for row in second["messages"])
    assert len(first["messages"]) + len(second["messages"]) == 30


async def _refusal(client: Agent, **args: Any) -> str:
    body = await client.call("recall", **args)
    assert body["ok"] is False, body
    assert body["messages"] == []
    error: str = body["error"]
    return error


async def test_a_tampered_or_truncated_cursor_is_refused(lib: Library, served: Served) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 20)
    first = await _first_page(client)
    cursor = first["next_cursor"]
    flipped = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]
    for bad in (flipped, cursor[:-4], cursor + "A", "not-a-cursor", "%%%"):
        error = await _refusal(client, agent_id="a", query="lantern", cursor=bad)
        assert error.startswith("invalid cursor")


async def test_a_cursor_is_bound_to_its_agent_query_key_and_tenant(
    lib: Library, served: Served
) -> None:
    owner, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 20)
    await _fill(seed, 20, agent="b")
    first = await _first_page(owner)
    cursor = first["next_cursor"]
    same_tenant = Agent(served, await tenants.create_key(lib.db, "pages", label="second"))
    other_tenant, other_seed = await _tenant(lib, served, "others")
    await _fill(other_seed, 20)
    for client, agent, query in (
        (owner, "b", "lantern"),  # another agent
        (owner, "a", "lantern note"),  # another query
        (same_tenant, "a", "lantern"),  # another key of the tenant
        (other_tenant, "a", "lantern"),  # another tenant, same agent name
    ):
        error = await _refusal(client, agent_id=agent, query=query, cursor=cursor)
        assert error.startswith("invalid cursor")
    resumed = await owner.call("recall", agent_id="a", query="lantern", cursor=cursor)
    assert resumed["messages"]


async def test_an_expired_cursor_is_refused_with_its_reason(
    lib: Library, settings: Settings, database_url: str
) -> None:
    instant = dataclasses.replace(settings, recall_cursor_ttl=0)
    async with serve(instant, database_url) as served:
        client, seed = await _tenant(lib, served, "expiry")
        await _fill(seed, 20)
        first = await _first_page(client)
        error = await _refusal(client, agent_id="a", query="lantern", cursor=first["next_cursor"])
    assert error.startswith("cursor expired")


async def test_a_row_deleted_between_pages_is_reported_missing(
    lib: Library, served: Served
) -> None:
    client, seed = await _tenant(lib, served, "pages")
    await _fill(seed, 20)
    first = await _first_page(client)
    whole = await client.call("recall", agent_id="a", query="lantern", limit=20, deep=True)
    shown = {row["ref"] for row in first["messages"]}
    pending = [ref for ref in _best_first(whole["messages"]) if ref not in shown]
    gone = pending[0]
    await client.call("delete_memory", memory_id=int(gone.split(":")[1]))
    second = await client.call(
        "recall", agent_id="a", query="lantern", cursor=first["next_cursor"], max_tokens=100000
    )
    assert second["missing"] == [gone]
    assert [row["ref"] for row in reversed(second["messages"])] == pending[1:]


async def test_recall_with_context_keeps_the_newest_rows_and_echoes_on_the_first_page(
    client: Agent,
) -> None:
    for day in range(1, 21):
        message = {"content": _text(day), "timestamp": f"2026-01-{day:02d}T00:00:00+00:00"}
        await client.call("store", agent_id="a", message=message)
    external = [{"role": "user", "content": "lantern?", "timestamp": "2026-02-01T00:00:00Z"}]
    args = {"agent_id": "a", "query": "lantern", "limit": 20, "deep": True}
    first = await client.call(
        "recall_with_context", **args, external_context=external, max_tokens=400
    )
    echoes = [row for row in first["messages"] if row.get("context_type")]
    assert len(echoes) == 1
    rows = [row for row in first["messages"] if "ref" in row]
    stamps = [row["timestamp"] for row in first["messages"]]
    assert stamps == sorted(stamps)
    seen = [row["ref"] for row in rows]
    cursor = first.get("next_cursor")
    while cursor:
        page = await client.call("recall_with_context", **args, cursor=cursor)
        assert not any(row.get("context_type") for row in page["messages"])
        older = [row["timestamp"] for row in page["messages"]]
        assert older == sorted(older)
        assert max(older) < min(r["timestamp"] for r in rows)
        rows = page["messages"]
        seen += [row["ref"] for row in rows]
        cursor = page.get("next_cursor")
    assert len(seen) == len(set(seen)) == 20
