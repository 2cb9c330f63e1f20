"""An agent's memories and episodes in the console, and search through the recall
pipeline: newest first, keyset pages, hostile text inert, grants and tenants as walls."""

from __future__ import annotations

import re

from service.config import Settings
from service.memory import console, tenants
from service.memory.library import Library
from tests.app.console.client import Person
from tests.support import Agent, new_tenant, serve

SCRIPT = "<script>alert('mem')</script>"
IMG = '<img src=x onerror="alert(1)">'
LINK = '<a href="javascript:alert(2)">click me</a>'
LONG_WORD = "W" * 16_000


def _refs(html: str) -> list[str]:
    return re.findall(r"<code>((?:mem|ep):\d+)</code>", html)


async def test_memories_and_episodes_come_newest_first_in_keyset_pages(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-list")
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        ids = [
            (await writer.call("store", agent_id="scout", message={"content": f"fact {n}"}))["id"]
            for n in range(5)
        ]
        episode = await writer.call("archive_episode", agent_id="scout", summary="the trip")
        await person.signed_in(key)
        memories = (await person.page("/agent", agent="scout")).text
        episodes = (await person.page("/agent", agent="scout", show="episodes")).text
        caller = await tenants.authenticate(lib.db, key)
        assert caller is not None
        first = await console.list_records(lib, caller.tenant_id, "scout", "mem", limit=2)
        assert first.next_before is not None
        second = await console.list_records(
            lib, caller.tenant_id, "scout", "mem", first.next_before, limit=2
        )
        older = (await person.page("/agent", agent="scout", before=first.next_before)).text
        bad = await person.get("/agent", agent="scout", before="not-a-cursor")
    assert _refs(memories) == [f"mem:{n}" for n in reversed(ids)]
    assert _refs(episodes) == [f"ep:{episode['episode_id']}"]
    assert [row.id for row in first.records] == [ids[4], ids[3]]
    assert [row.id for row in second.records] == [ids[2], ids[1]]
    assert _refs(older) == [f"mem:{n}" for n in reversed(ids[:3])]
    assert bad.status_code == 400


async def test_hostile_memory_text_renders_inert_and_readable(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-xss")
    hostile = f"{SCRIPT} {IMG} {LINK} {LONG_WORD}"
    async with serve(settings, database_url) as served, Person(served) as person:
        await Agent(served, key).call("store", agent_id="a", message={"content": hostile})
        await person.signed_in(key)
        pages = [
            (await person.page("/agent", agent="a")).text,
            (await person.page("/search", agent="a", q="click")).text,
        ]
    for page in pages:
        assert "<script>alert" not in page
        assert "<img src=x" not in page
        assert 'href="javascript:' not in page
        assert "&lt;script&gt;alert(&#39;mem&#39;)&lt;/script&gt;" in page
        assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in page
        assert "&lt;a href=&#34;javascript:alert(2)&#34;&gt;click me&lt;/a&gt;" in page
        assert "W" * 300 in page  # the long word is shown (a preview of it), wrapped by CSS
        assert "more characters" in page


async def test_search_runs_recall_with_its_filters_and_says_why_each_row_matched(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-search")
    long_text = "filler words here. " * 40 + "The lighthouse keeper paints the door teal."
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        await writer.call("store", agent_id="a", message={"content": long_text})
        await writer.call(
            "store", agent_id="a", channel="ops", message={"content": "the lighthouse in ops"}
        )
        await writer.call("store", agent_id="a", message={"content": "nothing to see"})
        await person.signed_in(key)
        found = (await person.page("/search", agent="a", q="lighthouse teal")).text
        scoped = (await person.page("/search", agent="a", q="lighthouse", channel="web")).text
    assert "Excerpt:" in found
    assert "The lighthouse keeper paints the door teal." in found
    assert '<span class="tag">lexical</span>' in found
    assert re.search(r"(hybrid|rrf|rsf|confidence|cosine) \d\.\d{4}", found)
    assert "nothing to see" not in found
    # channel "web" sees its own rows and the channel-less ones, never those of "ops"
    assert "the lighthouse in ops" not in scoped
    assert "lighthouse keeper" in scoped


async def test_another_tenant_or_a_non_granted_agent_cannot_be_reached_by_editing_urls(
    lib: Library, settings: Settings, database_url: str
) -> None:
    owner = await new_tenant(lib, "console-owner")
    narrow = await tenants.create_key(
        lib.db, "console-owner", grants={"*": "read", "secret": "none"}
    )
    stranger = await new_tenant(lib, "console-other")
    async with serve(settings, database_url) as served:
        await Agent(served, owner).call(
            "store", agent_id="secret", message={"content": "the vault code is 1234"}
        )
        answers = []
        for key in (narrow, stranger):
            async with Person(served) as person:
                await person.signed_in(key)
                for path, params in (
                    ("/agent", {"agent": "secret"}),
                    ("/agent", {"agent": "secret", "show": "episodes"}),
                    ("/search", {"agent": "secret", "q": "vault"}),
                    ("/search", {"agent": "*", "q": "vault"}),
                    ("/agent", {"agent": ""}),
                ):
                    answers.append(await person.get(path, **params))
    assert all("vault code" not in answer.text for answer in answers)
    # "*" is a sweep: allowed only at the least of the key's grants (here none), as for tools
    assert [answer.status_code for answer in answers[:5]] == [404] * 5
