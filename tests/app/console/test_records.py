"""An agent's memories and episodes in the console, and search through the recall
pipeline: newest first, keyset pages, hostile text inert, grants and tenants as walls."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

from service.app.console.pages import SEARCH_LIMIT
from service.config import Settings
from service.memory import console, tenants
from service.memory.library import Library
from service.memory.operating_context import storage
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
                    ("/agent", {"agent": "secret", "project": "@auto", "from": "2020-01-01"}),
                    ("/search", {"agent": "secret", "q": "vault", "to": "2030-01-01"}),
                ):
                    answers.append(await person.get(path, **params))
    assert all("vault code" not in answer.text for answer in answers)
    # "*" is a sweep: allowed only at the least of the key's grants (here none), as for tools
    assert [answer.status_code for answer in answers[:7]] == [404] * 7


async def test_lists_filter_by_project_and_stored_day_in_keyset_pages(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-list-filters")
    today = datetime.now(UTC).date()
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        ids = {}
        for project in ("atlas", "borealis", ""):
            stored = await writer.call(
                "store", agent_id="a", project_id=project, message={"content": f"in {project}"}
            )
            ids[project] = stored["id"]
        await writer.call("archive_episode", agent_id="a", project_id="borealis", summary="trip")
        await person.signed_in(key)
        atlas = (await person.page("/agent", agent="a", project="atlas")).text
        today_only = (
            await person.page("/agent", agent="a", **{"from": str(today), "to": str(today)})
        ).text
        tomorrow = str(today + timedelta(days=1))
        future = (await person.page("/agent", agent="a", **{"from": tomorrow})).text
        past = (await person.page("/agent", agent="a", to=str(today - timedelta(days=1)))).text
        atlas_episodes = (
            await person.page("/agent", agent="a", show="episodes", project="atlas")
        ).text
        bad_day = await person.get("/agent", agent="a", **{"from": "2024-02-30"})
        backwards = await person.get("/agent", agent="a", **{"from": tomorrow, "to": str(today)})
        caller = await tenants.authenticate(lib.db, key)
        assert caller is not None
        narrowed = console.RecordsFilter(project_id="borealis")
        first = await console.list_records(
            lib, caller.tenant_id, "a", "mem", limit=1, filters=narrowed
        )
        assert first.next_before is not None
        second = await console.list_records(
            lib, caller.tenant_id, "a", "mem", first.next_before, limit=1, filters=narrowed
        )
    # a project reads as the tools read it: its own rows and the global pool's
    assert _refs(atlas) == [f"mem:{ids['']}", f"mem:{ids['atlas']}"]
    assert 'value="atlas"' in atlas  # the filter stays in the form and in the pager
    assert _refs(today_only) == [f"mem:{ids[p]}" for p in ("", "borealis", "atlas")]
    assert _refs(future) == []
    assert _refs(past) == []
    assert _refs(atlas_episodes) == []
    assert [bad_day.status_code, backwards.status_code] == [400, 400]
    assert [row.id for row in first.records + second.records] == [ids[""], ids["borealis"]]


async def test_a_list_pager_keeps_its_filters(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-list-pager")
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        for n in range(console.RECORDS_PAGE + 1):
            await writer.call(
                "store", agent_id="a", project_id="atlas", message={"content": f"row {n}"}
            )
        await person.signed_in(key)
        page = (await person.page("/agent", agent="a", project="atlas")).text
    assert re.search(r'href="[^"]*before=[^"]*project=atlas', page)


async def test_search_dates_are_recalls_time_cue_and_match_a_recall_through_mcp(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-search-dates")
    stamps = ["2023-03-10T10:00:00Z", "2024-06-10T10:00:00Z", "2025-01-10T10:00:00Z"]
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        for stamp in stamps:
            content = f"the harbour log of {stamp[:4]}"
            await writer.call(
                "store", agent_id="a", message={"content": content, "timestamp": stamp}
            )
        await person.signed_in(key)
        dated = {"from": "2024-01-01", "to": "2024-12-31"}
        page = (await person.page("/search", agent="a", q="harbour", **dated)).text
        cue = {"after": "2024-01-01", "before": "2024-12-31", "confidence": "sure"}
        recalled = await writer.call(
            "recall", agent_id="a", query="harbour", limit=20, time_cue=cue
        )
        bad = await person.get("/search", agent="a", q="harbour", to="31/12/2024")
    expected = [row["ref"] for row in reversed(recalled["messages"]) if "ref" in row]
    assert _refs(page) == expected  # best first, as the console lists
    assert "2024-01-01T00:00:00+00:00" in page
    assert "2025-01-01T00:00:00+00:00" in page
    assert page.count('<span class="tag">in period</span>') == 1
    assert bad.status_code == 400


async def test_the_project_filter_passes_the_operating_contexts_gate_as_the_tools_do(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-gate")
    context = (
        'version = 1\ncontext_revision = "rev-1"\n[registry]\n'
        'project_ids = ["atlas"]\nenforce = "reject"\n[defaults]\na = "atlas"\n'
    )
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        for project in ("atlas", "borealis"):
            await writer.call(
                "store", agent_id="a", project_id=project, message={"content": f"in {project}"}
            )
        await storage.set_context(lib.db, "console-gate", context)  # borealis stored before
        await person.signed_in(key)
        auto = (await person.page("/agent", agent="a", project="@auto")).text
        auto_search = (await person.page("/search", agent="a", q="in", project="@auto")).text
        stray = (await person.page("/agent", agent="a", project="borealis")).text
        tool = await writer.call("list_memories", agent_id="a", project_id="borealis")
    for page in (auto, auto_search):
        assert "in atlas" in page
        assert "in borealis" not in page
        assert "@auto resolved to" in page
    # a read outside the registry is warned, never refused, as the tools do
    assert "in borealis" in stray
    assert str(tool["operating_context_warning"]) in unescape(stray)


async def test_a_dated_search_shows_the_rows_the_time_cue_holds(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-search-seats")
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        for month in ("03", "04"):
            stamp = f"2024-{month}-10T10:00:00Z"
            content = f"the 2024 log of month {month}"
            await writer.call(
                "store", agent_id="a", message={"content": content, "timestamp": stamp}
            )
        for n in range(SEARCH_LIMIT + 2):
            await writer.call("store", agent_id="a", message={"content": f"a later note {n}"})
        await person.signed_in(key)
        answer = await person.get("/search", agent="a", q="", **{"from": "2024-01-01"})
        cue = {"after": "2024-01-01", "confidence": "sure"}
        recalled = await writer.call("recall", agent_id="a", query="", limit=20, time_cue=cue)
    held = [
        row["ref"] for row in recalled["messages"] if "admission" in row.get("match_reason", {})
    ]
    assert held  # the limit cut the period's rows: the cue holds them
    assert answer.status_code == 200, answer.text[:300]
    assert answer.text.count('<span class="tag">in period</span>') == len(held)
    assert '<span class="tag">held</span>' in answer.text
    expected = [row["ref"] for row in reversed(recalled["messages"]) if "ref" in row]
    assert _refs(answer.text) == expected
