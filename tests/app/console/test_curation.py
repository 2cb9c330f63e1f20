"""One record in the console, and its edit, lock, unlock and delete: each confirmed first,
each run as the tool itself (grants, locks, the persistence pause, usage), none reachable
across tenants, agents or a read-only key (docs/console.md)."""

from __future__ import annotations

import re

import httpx

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from tests.app.console.client import Person, csrf_of, hidden_fields
from tests.support import Agent, Served, new_tenant, serve

HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> <a href='javascript:x'>x</a>"
LONG_WORD = "Z" * 16_000


async def _store(served: Served, key: str, agent: str, content: str) -> str:
    stored = await Agent(served, key).call("store", agent_id=agent, message={"content": content})
    return f"mem:{stored['id']}"


async def _act(
    person: Person, action: str, agent: str, ref: str, **extra: str
) -> tuple[httpx.Response, httpx.Response]:
    """Post ``action`` from the record page, then confirm it: (confirmation, result)."""
    token = csrf_of((await person.page("/agents")).text)
    fields = {"csrf": token, "agent": agent, "ref": ref, **extra}
    confirm = await person.post(f"/record/{action}", fields)
    assert confirm.status_code == 200, confirm.text[:400]
    done = await person.post(f"/record/{action}", hidden_fields(confirm.text))
    return confirm, done


async def _text_of(served: Served, key: str, ref: str, agent: str = "a") -> str:
    got = await Agent(served, key).call("get_contents", agent_id=agent, refs=[ref])
    return str(got["items"][0]["content"]) if got.get("items") else ""


async def test_the_record_page_shows_the_whole_text_inert_with_its_facts(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-record")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", HOSTILE)
        long_ref = await _store(served, key, "a", LONG_WORD)
        await person.signed_in(key)
        page = (await person.page("/record", agent="a", ref=ref)).text
        long_page = (await person.page("/record", agent="a", ref=long_ref)).text
    assert LONG_WORD in long_page  # whole, not a preview (CSS wraps it anywhere)
    assert "href='javascript:" not in page
    assert 'href="javascript:' not in page
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"<code>{ref}</code>" in page
    assert "unlocked" in page
    assert "none (found lexically only)" in page  # embeddings are off in tests


async def test_edit_is_confirmed_then_runs_update_memory_and_counts_in_usage(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-edit")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", "the door is red")
        await person.signed_in(key)
        form = (await person.page("/record/edit", agent="a", ref=ref)).text
        assert "the door is red</textarea>" in form
        confirm, done = await _act(person, "edit", "a", ref, content="the door is <b>teal</b>")
        assert "the door is &lt;b&gt;teal&lt;/b&gt;" in confirm.text
        assert await _text_of(served, key, ref) == "the door is <b>teal</b>"
        after = (await person.page("/record", agent="a", ref=ref)).text
    assert done.status_code == 303
    assert (
        done.headers["location"]
        == f"/console/record?agent=a&ref={ref.replace(':', '%3A')}&done=updated"
    )
    assert "the door is &lt;b&gt;teal&lt;/b&gt;" in after
    async with lib.db.admin_tx() as conn:  # the final flush ran at shutdown
        calls = await conn.fetchval("SELECT calls FROM usage_daily WHERE tool = 'update_memory'")
    assert calls == 1


async def test_an_unconfirmed_action_changes_nothing(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-confirm")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", "keep me")
        await person.signed_in(key)
        token = csrf_of((await person.page("/agents")).text)
        asked = await person.post("/record/delete", {"csrf": token, "agent": "a", "ref": ref})
        still = await _text_of(served, key, ref)
    assert asked.status_code == 200
    assert "Yes, delete" in asked.text
    assert still == "keep me"


async def test_a_locked_memory_refuses_edit_and_delete_until_unlocked(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-lock")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", "precious")
        await person.signed_in(key)
        _, locked = await _act(person, "lock", "a", ref)
        page = (await person.page("/record", agent="a", ref=ref)).text
        _, edit = await _act(person, "edit", "a", ref, content="changed")
        _, delete = await _act(person, "delete", "a", ref)
        kept = await _text_of(served, key, ref)
        _, unlocked = await _act(person, "unlock", "a", ref)
        _, deleted = await _act(person, "delete", "a", ref)
        gone = await person.get("/record", agent="a", ref=ref)
    assert locked.status_code == 303
    assert "locked: no edit or deletion" in page
    assert (edit.status_code, delete.status_code) == (409, 409)
    assert "locked" in edit.text.lower()
    assert kept == "precious"
    assert unlocked.status_code == 303
    assert deleted.status_code == 303
    assert deleted.headers["location"] == "/console/agent?agent=a&done=deleted"
    assert gone.status_code == 404


async def test_a_read_only_key_sees_no_action_and_its_forged_post_is_refused(
    lib: Library, settings: Settings, database_url: str
) -> None:
    owner = await new_tenant(lib, "console-ro")
    reader = await tenants.create_key(lib.db, "console-ro", grants={"*": "read"})
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, owner, "a", "read me, do not change me")
        await person.signed_in(reader)
        page = (await person.page("/record", agent="a", ref=ref)).text
        token = csrf_of(page)
        forged = [
            await person.post(
                f"/record/{action}",
                {"csrf": token, "agent": "a", "ref": ref, "content": "x", "confirmed": "yes"},
            )
            for action in ("edit", "lock", "delete")
        ]
        kept = await _text_of(served, owner, ref)
    assert 'action="/console/record/' not in page
    assert "reads only" in page
    assert [answer.status_code for answer in forged] == [403, 403, 403]
    assert all("permission_denied" in answer.text for answer in forged)
    assert kept == "read me, do not change me"


async def test_posts_cannot_reach_another_tenant_or_a_non_granted_agent(
    lib: Library, settings: Settings, database_url: str
) -> None:
    owner = await new_tenant(lib, "console-victim")
    narrow = await tenants.create_key(
        lib.db, "console-victim", grants={"*": "read-write", "secret": "none"}
    )
    stranger = await new_tenant(lib, "console-attacker")
    async with serve(settings, database_url) as served:
        ref = await _store(served, owner, "secret", "the vault code is 1234")
        answers = []
        for key in (narrow, stranger):
            async with Person(served) as person:
                await person.signed_in(key)
                token = csrf_of((await person.page("/agents")).text)
                for agent in ("secret", "open", ""):
                    answers.append(await person.get("/record", agent=agent, ref=ref))
                    for action in ("edit", "delete", "lock"):
                        fields = {"csrf": token, "agent": agent, "ref": ref}
                        fields |= {"content": "pwned", "confirmed": "yes"}
                        answers.append(await person.post(f"/record/{action}", fields))
        kept = await _text_of(served, owner, ref, "secret")
        locked = await Agent(served, owner).call("list_memories", agent_id="secret")
    assert kept == "the vault code is 1234"
    assert all(answer.status_code in (403, 404) for answer in answers)
    assert all("vault code" not in answer.text for answer in answers)
    assert not re.search(r'"locked": ?true', str(locked))


async def test_a_persistence_pause_skips_console_writes_as_it_skips_tools(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-pause")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", "as it was")
        await Agent(served, key).call("pause_persistence", ttl_seconds=600)
        await person.signed_in(key)
        _, edit = await _act(person, "edit", "a", ref, content="changed")
        _, delete = await _act(person, "delete", "a", ref)
        page = (await person.page("/record", agent="a", ref=ref, done="paused")).text
        kept = await _text_of(served, key, ref)
    assert edit.status_code == 303
    assert edit.headers["location"].endswith("done=paused")
    assert delete.headers["location"].endswith("done=paused")
    assert "Writes are paused" in page
    assert kept == "as it was"


async def test_a_record_post_without_the_csrf_token_is_refused(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-csrf3")
    async with serve(settings, database_url) as served, Person(served) as person:
        ref = await _store(served, key, "a", "stay")
        await person.signed_in(key)
        fields = {"agent": "a", "ref": ref, "confirmed": "yes"}
        refused = await person.post("/record/delete", fields)
        kept = await _text_of(served, key, ref)
    assert refused.status_code == 403
    assert kept == "stay"
