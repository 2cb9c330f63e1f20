"""get_contents over MCP/HTTP (acceptance 20, 46-52), its library and its one statement."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import asyncpg
import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from service.config import Settings
from service.db import contents as contents_queries
from service.errors import InvalidInput
from service.mcp.registry import ToolEnv
from service.mcp.shaping import rows
from service.mcp.tools.contents import GET_CONTENTS
from service.memory import contents, tenants
from service.memory.library import Library
from service.models import Caller
from tests.support import Agent, Served, new_tenant, serve, text

TOO_MANY = "too many refs (21; max 20) — split the fetch"
REFS_REQUIRED = "refs must be a non-empty list of 'mem:<id>' / 'ep:<id>' strings"
MALFORMED: list[Any] = [
    "bogus",
    "mem:abc",
    "mem:-1",
    "mem:0",
    "profile:1",
    "mem:",
    ":5",
    "ep:1_0",
    "MEM:1",
    "mem:" + "9" * 30,
    "x" * 10_000,
]


async def _caller(lib: Library, agent: Agent) -> Caller:
    caller = await tenants.authenticate(lib.db, agent.key)
    assert caller is not None
    return caller


async def _store(agent: Agent, content: str, agent_id: str = "a", **message: Any) -> int:
    answer = await agent.call("store", agent_id=agent_id, message={"content": content, **message})
    assert answer["result"] == "stored", answer
    return int(answer["id"])


async def _archive(agent: Agent, summary: str, agent_id: str = "a", **extra: Any) -> int:
    answer = await agent.call("archive_episode", agent_id=agent_id, summary=summary, **extra)
    assert answer["ok"] is True, answer
    return int(answer["episode_id"])


async def test_memory_and_episode_ids_never_collide_nor_cross_kinds(client: Agent) -> None:
    """Acceptance 20, adapted: one id sequence here, so assert the kinds stay apart."""
    mem = await _store(client, "a memory")
    ep = await _archive(client, "an episode")
    assert mem != ep
    both = await client.call("get_contents", agent_id="a", refs=[f"mem:{mem}", f"ep:{ep}"])
    assert [item["content"] for item in both["items"]] == ["a memory", "[Episode] an episode"]
    assert both["missing"] == []
    crossed = await client.call("get_contents", agent_id="a", refs=[f"mem:{ep}", f"ep:{mem}"])
    assert crossed == {"items": [], "missing": [f"mem:{ep}", f"ep:{mem}"], "count": 0}


async def test_more_than_20_refs_is_refused_by_schema_and_handler(
    client: Agent, lib: Library
) -> None:
    """Acceptance 46: schema error over MCP; the handler and the library say it too."""
    refs = [f"mem:{n}" for n in range(1, 22)]
    result = await client.raw("get_contents", {"agent_id": "a", "refs": refs})
    assert result.is_error
    assert text(result).startswith("Input validation error: ")
    assert "is too long" in text(result)
    caller = await _caller(lib, client)
    env = ToolEnv(lib, caller)
    with pytest.raises(InvalidInput, match=re.escape(TOO_MANY)):
        await GET_CONTENTS.handler(env, GET_CONTENTS.read({"agent_id": "a", "refs": refs}))
    with pytest.raises(InvalidInput, match=re.escape(TOO_MANY)):
        await contents.get_contents(lib, caller.tenant_id, "a", refs)
    twenty = await client.call("get_contents", agent_id="a", refs=refs[:20])
    assert twenty["count"] == 0
    assert len(twenty["missing"]) == 20


async def test_empty_refs_and_empty_agent_are_tool_failures(client: Agent, lib: Library) -> None:
    """Acceptance 47 (and a non-list refs for library callers)."""
    assert await client.call("get_contents", agent_id="a", refs=[]) == {
        "ok": False,
        "error": REFS_REQUIRED,
    }
    assert await client.call("get_contents", agent_id="", refs=["mem:1"]) == {
        "ok": False,
        "error": "agent_id is required",
    }
    tenant = (await _caller(lib, client)).tenant_id
    for refs in ("mem:1", None, {"mem:1": 1}, 5):
        with pytest.raises(InvalidInput, match=re.escape(REFS_REQUIRED)):
            await contents.get_contents(lib, tenant, "a", refs)


async def test_another_agents_or_tenants_ref_is_missing_without_a_hint(
    client: Agent, lib: Library, served: Served
) -> None:
    """Acceptance 48, and the same answer from another tenant using the same agent name."""
    mem = await _store(client, "owned by a")
    ep = await _archive(client, "episode of a")
    refs = [f"mem:{mem}", f"ep:{ep}"]
    expected = {"items": [], "missing": refs, "count": 0}
    assert await client.call("get_contents", agent_id="b", refs=refs) == expected
    other = Agent(served, await new_tenant(lib, "other"))
    await _store(other, "owned by the other tenant's a")
    assert await other.call("get_contents", agent_id="a", refs=refs) == expected
    unknown = [f"mem:{10**12}", f"ep:{10**12 + 1}"]
    nothing = await client.call("get_contents", agent_id="a", refs=unknown)
    assert nothing == {"items": [], "missing": unknown, "count": 0}


async def test_malformed_refs_land_in_missing_and_the_batch_continues(
    client: Agent, lib: Library
) -> None:
    """Acceptance 49, plus the other malformed shapes and non-strings from the library."""
    mem = await _store(client, "the valid one")
    ep = await _archive(client, "the valid episode")
    refs = [*MALFORMED[:5], f"mem:{mem}", *MALFORMED[5:], f"ep: {ep} "]
    answer = await client.call("get_contents", agent_id="a", refs=refs[:20])
    assert [item["ref"] for item in answer["items"]] == [f"mem:{mem}", f"ep: {ep} "]
    assert answer["missing"] == MALFORMED
    assert answer["count"] == 2
    tenant = (await _caller(lib, client)).tenant_id
    loose = await contents.get_contents(lib, tenant, "a", [5, None, ["x"], f"mem:{mem}"])
    assert loose.missing == ("5", "None", "['x']")
    assert [item.content for item in loose.items] == ["the valid one"]


async def test_batch_budget_defers_the_rest_in_request_order(client: Agent, lib: Library) -> None:
    """Acceptance 50; the library itself returns every row whole."""
    ids = [await _store(client, f"{n}" + "x" * 14_999) for n in range(4)]
    refs = [f"mem:{i}" for i in ids] + ["ep:99", "bogus"]
    answer = await client.call("get_contents", agent_id="a", refs=refs)
    assert [item["ref"] for item in answer["items"]] == refs[:2]
    assert all(len(item["content"]) == 15_000 for item in answer["items"])
    assert answer["deferred"] == refs[2:]
    assert answer["missing"] == []
    assert (answer["count"], answer["budget_chars"]) == (2, 40_000)
    rest = await client.call("get_contents", agent_id="a", refs=answer["deferred"])
    assert [item["ref"] for item in rest["items"]] == refs[2:4]
    assert rest["missing"] == ["ep:99", "bogus"]
    assert "deferred" not in rest
    assert "budget_chars" not in rest
    tenant = (await _caller(lib, client)).tenant_id
    full = await contents.get_contents(lib, tenant, "a", refs)
    assert len(full.items) == 4
    assert full.deferred == ()


def _item_cost(item: dict[str, Any]) -> int:
    """CPersona 2.6's charge for one item: the content's length plus every other field as
    the caller receives it (a string's length, anything else serialised)."""
    return sum(
        len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
        for value in item.values()
    )


async def test_the_batch_budget_charges_the_whole_item_not_only_its_content(
    client: Agent,
) -> None:
    """CPersona 2.6: a large ``source`` spends the budget too, so six short rows with
    7,900-character sources (about 48,000 characters sent) defer the rows past 40,000."""
    source = {"type": "User", "id": "u1", "name": "n" * 7_900}
    ids = [await _store(client, f"fact {n}", source=source) for n in range(6)]
    refs = [f"mem:{i}" for i in ids]
    answer = await client.call("get_contents", agent_id="a", refs=refs)
    sent = [item["ref"] for item in answer["items"]]
    assert answer["deferred"] == refs[len(sent) :]
    assert answer["budget_chars"] == 40_000
    assert sum(_item_cost(item) for item in answer["items"]) <= 40_000
    assert sent == refs[: len(sent)]
    assert 1 <= len(sent) < 6


async def test_a_single_row_over_the_budget_comes_whole(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """Acceptance 51 (the write cap is raised so one row can exceed 40,000 characters)."""
    roomy = dataclasses.replace(settings, max_content_length=50_000)
    async with serve(roomy, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "roomy"))
        big = await _store(agent, "b" * 45_000)
        small = await _store(agent, "small")
        alone = await agent.call("get_contents", agent_id="a", refs=[f"mem:{big}"])
        first = await agent.call("get_contents", agent_id="a", refs=[f"mem:{big}", f"mem:{small}"])
    assert alone["items"][0]["content"] == "b" * 45_000
    assert "deferred" not in alone
    assert len(first["items"]) == 1
    assert first["deferred"] == [f"mem:{small}"]


async def test_episode_items(client: Agent) -> None:
    """Acceptance 52: content, source, resolved, timestamp = start_time else created_at."""
    history = [{"role": "user", "content": "x", "timestamp": "2026-01-02T03:04:05Z"}]
    dated = await _archive(client, "dated", history=history, resolved=True)
    undated = await _archive(client, "undated")
    answer = await client.call("get_contents", agent_id="a", refs=[f"ep:{dated}", f"ep:{undated}"])
    created = {
        row["id"]: row["created_at"] for row in (await client.call("list_episodes"))["episodes"]
    }
    assert answer["items"] == [
        {
            "ref": f"ep:{dated}",
            "content": "[Episode] dated",
            "source": {"System": "episode"},
            "timestamp": "2026-01-02T03:04:05Z",
            "resolved": True,
        },
        {
            "ref": f"ep:{undated}",
            "content": "[Episode] undated",
            "source": {"System": "episode"},
            "timestamp": created[undated],
            "resolved": False,
        },
    ]


async def test_memory_items_carry_source_timestamp_and_msg_id_only_when_set(client: Agent) -> None:
    tagged = await _store(
        client, "tagged", id="msg-7", source={"User": "u1"}, timestamp="2026-02-03T00:00:00Z"
    )
    plain = await _store(client, "plain")
    refs = [f"mem:{tagged}", f"mem:{plain}", f"mem:{tagged}"]
    answer = await client.call("get_contents", agent_id="a", refs=refs)
    first, second, again = answer["items"]
    assert first == {
        "ref": f"mem:{tagged}",
        "content": "tagged",
        "id": "msg-7",
        "source": {"type": "User", "id": "u1", "name": "u1"},
        "timestamp": "2026-02-03T00:00:00Z",
    }
    assert "id" not in second
    assert second["source"] == {}
    assert second["timestamp"].endswith("+00:00")
    assert again == first  # duplicates are resolved independently
    assert answer["count"] == 3


async def test_get_contents_is_listed_read_only_with_its_bounds(client: Agent) -> None:
    from tests.support import mcp_session

    async with mcp_session(client.served, client.key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    tool = tools["get_contents"]
    assert tool.input_schema["required"] == ["agent_id", "refs"]
    assert tool.input_schema["properties"]["refs"]["maxItems"] == 20
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True


async def test_one_statement_resolves_memories_and_episodes(client: Agent, lib: Library) -> None:
    mem = await _store(client, "m")
    ep = await _archive(client, "e")
    tenant = (await _caller(lib, client)).tenant_id
    seen: list[str] = []

    def record(query: asyncpg.connection.LoggedQuery) -> None:
        seen.append(query.query)

    async with lib.db.tenant_tx(tenant) as conn:
        # A first run lets asyncpg introspect the array types once per connection.
        await contents_queries.get_contents(conn, tenant, "a", [mem], [ep])
        conn.add_query_logger(record)
        try:
            found = await contents_queries.get_contents(conn, tenant, "a", [mem, ep], [mem, ep])
        finally:
            conn.remove_query_logger(record)
    assert len(seen) == 1
    assert "UNION ALL" in seen[0]
    assert list(found.memories) == [mem]
    assert list(found.episodes) == [ep]


REF_TEXT = st.one_of(
    st.text(max_size=50),
    st.builds(
        lambda k, n: f"{k}:{n}",
        st.sampled_from(["mem", "ep", "Mem", "", "x"]),
        st.one_of(st.integers(-5, 2**64), st.text(max_size=8)),
    ),
)


@hypothesis_settings(max_examples=300)
@given(REF_TEXT)
def test_every_parsed_ref_has_a_canonical_form_the_boundary_emits(ref: str) -> None:
    """One parser (the library's); the refs the boundary formats parse back to the same row."""
    parsed = contents.parse_ref(ref)
    if parsed is not None:
        assert contents.parse_ref(rows.format_ref(*parsed)) == parsed


async def test_reading_needs_read_permission_on_the_agent(lib: Library, served: Served) -> None:
    writer = Agent(served, await new_tenant(lib, "acl"))
    mem = await _store(writer, "guarded", agent_id="guarded")
    key = await tenants.create_key(lib.db, "acl", grants={"*": "none", "guarded": "read"})
    reader = Agent(served, key)
    allowed = await reader.call("get_contents", agent_id="guarded", refs=[f"mem:{mem}"])
    assert [item["content"] for item in allowed["items"]] == ["guarded"]
    denied = await reader.call("get_contents", agent_id="other", refs=[f"mem:{mem}"])
    assert denied["ok"] is False
    assert (denied["error"], denied["required"]) == ("permission_denied", "read")
