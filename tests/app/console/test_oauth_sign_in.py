"""Signing in to the console through the built-in OAuth authorization server (with
CPERSONA_PUBLIC_URL): the console is a client of its own server, the person pastes a key
on the consent page, and the code comes back to the console, which opens a session of that
key (docs/console.md, "Tour")."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from tests.app.console.client import Person, hidden_fields
from tests.support import new_tenant, serve


async def _through_consent(person: Person, key: str) -> httpx.Response:
    """Start the OAuth sign-in, paste ``key`` on the consent page, approve: the answer
    of the server's redirect back to the console (the callback's own answer)."""
    start = await person.get("/sign-in/oauth")
    assert start.status_code == 303, start.text[:300]
    consent = await person.http.get(start.headers["location"])
    assert consent.status_code == 200, consent.text[:300]
    fields = {**hidden_fields(consent.text), "api_key": key, "decision": "approve"}
    authorize = urlsplit(start.headers["location"])
    origin = f"{authorize.scheme}://{authorize.netloc}"
    approved = await person.http.post(
        f"{origin}{authorize.path}", data=fields, headers={"origin": origin}
    )
    assert approved.status_code == 302, approved.text[:300]
    return await person.http.get(approved.headers["location"])


async def test_with_a_public_url_a_person_signs_in_through_the_oauth_consent_page(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-oauth")
    async with serve(settings, database_url, public=True) as served, Person(served) as person:
        form = (await person.page("/sign-in")).text
        back = await _through_consent(person, key)
        agents = await person.get("/agents")
        await tenants.revoke_key(lib.db, key[: tenants.PREFIX_LENGTH])
        revoked = await person.get("/agents")
    assert 'href="/console/sign-in/oauth"' in form
    assert back.status_code == 303
    assert back.headers["location"] == "/console/agents"
    assert agents.status_code == 200
    assert "console-oauth · key cpk_" in agents.text
    # the session is the key's, as a pasted key's: revoking the key ends it
    assert revoked.status_code == 303


async def test_a_callback_without_the_sign_ins_own_state_opens_nothing(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-oauth-state")
    async with serve(settings, database_url, public=True) as served:
        async with Person(served) as person:
            start = await person.get("/sign-in/oauth")
            state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
            forged = await person.get("/oauth/callback", code="x" * 43, state=state + "x")
            denied = await person.get("/oauth/callback", error="access_denied", state=state)
            after = await person.get("/agents")
        async with Person(served) as stranger:  # a code of someone else's sign-in
            replayed = await stranger.get("/oauth/callback", code="x" * 43, state=state)
        async with Person(served) as person:
            ok = await _through_consent(person, key)
    assert [forged.status_code, denied.status_code, replayed.status_code] == [400, 400, 400]
    assert "sign in again" in forged.text
    assert after.status_code == 303  # still signed out
    assert ok.status_code == 303


async def test_without_a_public_url_there_is_no_oauth_sign_in(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served, Person(served) as person:
        form = (await person.page("/sign-in")).text
        start = await person.get("/sign-in/oauth")
        callback = await person.get("/oauth/callback", code="x", state="y")
    assert "/sign-in/oauth" not in form
    assert [start.status_code, callback.status_code] == [404, 404]
