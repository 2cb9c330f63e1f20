"""The console's agents page: counts per agent, only the agents the key may read, keyset
pages, names rendered inert (docs/console.md)."""

from __future__ import annotations

import re

from service.config import Settings
from service.db.pool import Database
from service.memory import console, tenants
from service.memory.library import Library
from tests.app.console.client import Person
from tests.support import Agent, new_tenant, serve


def _row(html: str, agent: str) -> list[str]:
    """The cells of the table row of ``agent`` (its name escaped as the page shows it)."""
    match = re.search(
        rf'<th scope="row" class="text"><a href="[^"]*">{re.escape(agent)}</a></th>(.*?)</tr>',
        html,
        re.DOTALL,
    )
    assert match is not None, html
    return re.findall(r"<td[^>]*>([^<]*)</td>", match.group(1))


async def test_each_agent_shows_its_memories_episodes_locked_pending_and_last_write(
    lib: Library, settings: Settings, database_url: str, db: Database
) -> None:
    key = await new_tenant(lib, "console-counts")
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key)
        first = await writer.call("store", agent_id="scout", message={"content": "one"})
        second = await writer.call("store", agent_id="scout", message={"content": "two"})
        async with db.admin_tx() as conn:  # embeddings are off here: queue one by hand
            await conn.execute(
                "INSERT INTO embedding_jobs (tenant_id, item_kind, item_id) "
                "SELECT tenant_id, 'mem', id FROM memories WHERE id = $1",
                second["id"],
            )
        await writer.call("lock_memory", memory_id=first["id"])
        await writer.call("archive_episode", agent_id="scout", summary="a day out")
        await writer.call("store", agent_id="quiet", message={"content": "three"})
        await person.signed_in(key)
        page = (await person.page("/agents")).text
    scout = _row(page, "scout")
    assert scout[:4] == ["2", "1", "1", "1"]  # memories, episodes, locked, pending
    assert scout[4].endswith(" UTC")  # last write
    assert _row(page, "quiet")[:3] == ["1", "0", "0"]


async def test_an_agent_the_key_may_not_read_and_another_tenant_do_not_exist(
    lib: Library, settings: Settings, database_url: str
) -> None:
    owner = await new_tenant(lib, "console-walls")
    narrow = await tenants.create_key(
        lib.db, "console-walls", grants={"*": "read", "secret": "none"}
    )
    only = await tenants.create_key(lib.db, "console-walls", grants={"open": "read"})
    stranger = await new_tenant(lib, "console-stranger")
    async with serve(settings, database_url) as served:
        writer = Agent(served, owner)
        for agent in ("open", "secret", "other"):
            await writer.call("store", agent_id=agent, message={"content": f"of {agent}"})
        await Agent(served, stranger).call(
            "store", agent_id="foreign", message={"content": "theirs"}
        )
        pages = {}
        for name, key in {"narrow": narrow, "only": only, "stranger": stranger}.items():
            async with Person(served) as person:
                await person.signed_in(key)
                pages[name] = (await person.page("/agents")).text
    assert "open" in pages["narrow"]
    assert "other" in pages["narrow"]
    assert "secret" not in pages["narrow"]
    assert "open" in pages["only"]
    assert "other" not in pages["only"]
    assert "secret" not in pages["only"]
    assert "foreign" in pages["stranger"]
    assert all(agent not in pages["stranger"] for agent in ("open", "secret", "other"))


async def test_agents_come_in_keyset_pages_by_name(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-pages")
    caller = await tenants.authenticate(lib.db, key)
    assert caller is not None
    async with serve(settings, database_url) as served:
        for name in ("c", "a", "d", "b", "e"):
            await Agent(served, key).call("store", agent_id=name, message={"content": name})
    everyone = console.Readable(by_default=True, hidden=(), granted=())
    first = await console.list_agents(lib, caller.tenant_id, everyone, limit=2)
    second = await console.list_agents(lib, caller.tenant_id, everyone, "b", limit=2)
    last = await console.list_agents(lib, caller.tenant_id, everyone, "d", limit=2)
    assert [a.name for a in first.agents] == ["a", "b"]
    assert first.next_after == "b"
    assert [a.name for a in second.agents] == ["c", "d"]
    assert second.next_after == "d"
    assert [a.name for a in last.agents] == ["e"]
    assert last.next_after is None


async def test_a_hostile_agent_name_and_cursor_render_inert(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-hostile")
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    async with serve(settings, database_url) as served, Person(served) as person:
        await Agent(served, key).call("store", agent_id=hostile, message={"content": "x"})
        await person.signed_in(key)
        page = (await person.page("/agents")).text
        long_cursor = await person.get("/agents", after="x" * 5000)
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert long_cursor.status_code == 400
    assert "1000" in long_cursor.text
