"""A session ledger belongs to the credential that opened it (issue 36, finding 3).

Two keys of one tenant, the second read-only: key ids are public, so the read-only key
can name the other key's implicit session (``key:<KEY_ID>``) or its named session in
``X-CPersona-Session``. It must get a ledger of its own: it can neither make the other
key's next recall come back as ``seen: true`` stubs for rows that key never received,
nor learn from its own stubs which rows the other key recalled.
"""

from __future__ import annotations

from typing import Any

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.models import Permission
from tests.app.oauth.flows import FormConsent, OAuthSession
from tests.seeds import new_seed
from tests.support import Agent, Served, SessionAgent, serve

READ_ONLY: dict[str, Permission] = {"*": "read"}


async def _recall(client: Agent, **args: Any) -> list[dict[str, Any]]:
    body = await client.call("recall", agent_id="a", query="otter", deep=True, **args)
    rows: list[dict[str, Any]] = body["messages"]
    return rows


def _stubs(rows: list[dict[str, Any]]) -> set[str]:
    return {row["ref"] for row in rows if row.get("seen")}


async def _two_keys(lib: Library) -> tuple[str, str, set[str]]:
    """A tenant with three otter notes, its writer key and a read-only key."""
    seed = await new_seed(lib, "walls")
    refs = {f"mem:{await seed.memory(f'otter note {i}', agent='a')}" for i in range(3)}
    writer = await tenants.create_key(lib.db, "walls", label="writer")
    reader = await tenants.create_key(lib.db, "walls", label="reader", grants=READ_ONLY)
    return writer, reader, refs


def _key_session(key: str) -> str:
    return f"key:{key[: tenants.PREFIX_LENGTH]}"


async def test_a_read_only_key_naming_another_keys_session_cannot_stub_its_next_recall(
    lib: Library, served: Served
) -> None:
    writer, reader, refs = await _two_keys(lib)
    intruder = SessionAgent(served, reader, _key_session(writer))
    assert not _stubs(await _recall(intruder, novel_only=True))
    assert _stubs(await _recall(intruder, novel_only=True)) == refs  # its own ledger works
    assert not _stubs(await _recall(Agent(served, writer), novel_only=True))


async def test_a_read_only_key_cannot_read_which_rows_another_key_recalled(
    lib: Library, served: Served
) -> None:
    writer, reader, refs = await _two_keys(lib)
    assert not _stubs(await _recall(Agent(served, writer), novel_only=True))
    await _recall(SessionAgent(served, writer, "work"), novel_only=True)
    for session in (_key_session(writer), "work"):
        assert not _stubs(await _recall(SessionAgent(served, reader, session), novel_only=True))
    assert _stubs(await _recall(Agent(served, writer), novel_only=True)) == refs
    assert _stubs(await _recall(SessionAgent(served, writer, "work"), novel_only=True)) == refs


async def test_get_contents_records_only_into_the_callers_own_session(
    lib: Library, served: Served
) -> None:
    writer, reader, refs = await _two_keys(lib)
    await SessionAgent(served, reader, "work").call("get_contents", agent_id="a", refs=list(refs))
    assert not _stubs(await _recall(SessionAgent(served, writer, "work"), novel_only=True))
    assert _stubs(await _recall(SessionAgent(served, reader, "work"), novel_only=True)) == refs


async def test_an_oauth_grant_has_its_own_sessions_apart_from_the_key_it_came_from(
    lib: Library, settings: Settings, database_url: str
) -> None:
    writer, reader, refs = await _two_keys(lib)
    async with serve(settings, database_url, public=True) as served:
        consent = FormConsent(reader)
        oauth = OAuthSession(served, consent.open, consent.code)
        await oauth.call("get_operating_context")
        token = oauth.access_token
        await _recall(SessionAgent(served, writer, "work"), novel_only=True)
        await _recall(Agent(served, reader), novel_only=True)
        assert not _stubs(await _recall(Agent(served, token), novel_only=True))  # not the key's
        for session in ("work", _key_session(writer)):
            granted = SessionAgent(served, token, session)
            assert not _stubs(await _recall(granted, novel_only=True)), session
        assert _stubs(await _recall(Agent(served, token), novel_only=True)) == refs
