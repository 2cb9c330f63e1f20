"""Console sign-in, sessions, sign-out, CSRF and headers, over plain HTTP against the
real application (docs/console.md, "Security model")."""

from __future__ import annotations

import dataclasses
import secrets

import httpx
from structlog.testing import capture_logs

from service.config import Settings
from service.db.pool import Database
from service.memory import tenants
from service.memory.library import Library
from tests.app.console.client import Person, csrf_of
from tests.support import new_tenant, serve


def _wrong_key() -> str:
    return f"cpk_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


def _cookie_header(answer: httpx.Response, name: str) -> str:
    found = [value for value in answer.headers.get_list("set-cookie") if value.startswith(name)]
    assert len(found) == 1, answer.headers.get_list("set-cookie")
    return found[0].lower()


async def test_a_pasted_key_opens_a_server_side_session_in_an_http_only_strict_cookie(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-a")
    async with serve(settings, database_url) as served, Person(served) as person:
        answer = await person.sign_in(key)
        assert answer.status_code == 303
        assert answer.headers["location"] == "/console/agents"
        cookie = _cookie_header(answer, "cpersona_console=")
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        assert "path=/console" in cookie
        assert key.lower() not in cookie  # the cookie is a session id, never the key
        page = await person.page("/agents")
    assert "console-a" in page.text
    assert key[: tenants.PREFIX_LENGTH] in page.text


async def test_over_https_the_cookies_are_host_prefixed_and_secure(
    lib: Library, settings: Settings, database_url: str
) -> None:
    https = dataclasses.replace(settings, public_url="https://memory.example")
    async with serve(https, database_url) as served, Person(served) as person:
        form = await person.get("/sign-in")
    cookie = _cookie_header(form, "__Host-cpersona_console_csrf=")
    assert "secure" in cookie
    assert "path=/;" in cookie or cookie.endswith("path=/")
    assert "domain" not in cookie


async def test_pages_without_a_session_send_the_browser_to_sign_in(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served, Person(served) as person:
        for path in ("/agents", "/", ""):
            answer = await person.get(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"] == "/console/sign-in"
        person.http.cookies.set("cpersona_console", "forged", path="/console")
        forged = await person.get("/agents")
    assert forged.status_code == 303
    assert forged.headers["location"] == "/console/sign-in"


async def test_a_wrong_key_is_refused_and_logged_by_its_key_id_never_its_secret(
    settings: Settings, database_url: str
) -> None:
    wrong = _wrong_key()
    async with serve(settings, database_url) as served, Person(served) as person:
        with capture_logs() as logs:
            answer = await person.sign_in(wrong)
    assert answer.status_code == 401
    assert "not valid" in answer.text
    assert "set-cookie" not in answer.headers or "cpersona_console=" not in str(
        answer.headers.get_list("set-cookie")
    )
    refused = [line for line in logs if line["event"] == "console_sign_in_refused"]
    assert [line["key_id"] for line in refused] == [wrong[: tenants.PREFIX_LENGTH]]
    assert wrong not in repr(logs)
    assert wrong[tenants.PREFIX_LENGTH + 1 :] not in repr(logs)


async def test_sign_in_attempts_are_throttled_per_address_before_the_key_is_looked_up(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-throttle")
    limited = dataclasses.replace(settings, console_sign_in_attempts_per_hour=3.0)
    async with serve(limited, database_url) as served, Person(served) as person:
        for _ in range(3):
            assert (await person.sign_in(_wrong_key())).status_code == 401
        with capture_logs() as logs:
            throttled = await person.sign_in(key)  # even the right key waits
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) >= 1
    assert "Too many attempts" in throttled.text
    lines = [line for line in logs if line["event"] == "console_sign_in_throttled"]
    assert [line["key_id"] for line in lines] == [key[: tenants.PREFIX_LENGTH]]
    assert key not in repr(logs)


async def test_a_sign_in_post_without_the_form_token_is_refused(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-csrf")
    async with serve(settings, database_url) as served, Person(served) as person:
        no_cookie = await person.post("/sign-in", {"csrf": "x", "api_key": key})
        await person.get("/sign-in")  # the cookie is set, the field is wrong
        wrong_field = await person.post("/sign-in", {"csrf": "x", "api_key": key})
    assert no_cookie.status_code == 403
    assert wrong_field.status_code == 403
    assert "cpersona_console=" not in str(wrong_field.headers.get_list("set-cookie"))


async def test_a_signed_in_post_without_a_valid_csrf_token_is_refused(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-csrf2")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        missing = await person.post("/sign-out", {})
        wrong = await person.post("/sign-out", {"csrf": "0" * 64})
        still = await person.get("/agents")
    assert missing.status_code == 403
    assert wrong.status_code == 403
    assert still.status_code == 200  # nothing happened: still signed in


async def test_a_cross_site_post_is_refused_even_with_the_token(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-origin")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        token = csrf_of((await person.page("/agents")).text)
        foreign = await person.post("/sign-out", {"csrf": token}, origin="https://evil.example")
        marked = await person.post("/sign-out", {"csrf": token}, **{"sec-fetch-site": "cross-site"})
        still = await person.get("/agents")
    assert foreign.status_code == 403
    assert marked.status_code == 403
    assert still.status_code == 200


async def test_sign_out_ends_the_session_for_a_replayed_cookie_too(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-out")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        session_id = person.http.cookies["cpersona_console"]
        out = await person.submit("/sign-out", {}, csrf_from="/agents")
        assert out.status_code == 303
        assert out.headers["location"] == "/console/sign-in"
        async with Person(served) as thief:
            thief.http.cookies.set("cpersona_console", session_id, path="/console")
            replay = await thief.get("/agents")
    assert replay.status_code == 303
    assert replay.headers["location"] == "/console/sign-in"


async def test_revoking_the_key_ends_its_sessions_at_the_next_request(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-revoke")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        assert (await person.get("/agents")).status_code == 200
        await tenants.revoke_key(lib.db, key[: tenants.PREFIX_LENGTH])
        after = await person.get("/agents")
        posted = await person.post("/sign-out", {"csrf": "whatever"})
    assert after.status_code == 303
    assert after.headers["location"] == "/console/sign-in"
    assert posted.status_code == 303


async def test_an_idle_session_ends(
    lib: Library, settings: Settings, database_url: str, db: Database
) -> None:
    key = await new_tenant(lib, "console-idle")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        async with db.admin_tx() as conn:  # as if the last request was 31 minutes ago
            await conn.execute("UPDATE console_sessions SET seen_at = now() - interval '31 min'")
        idle = await person.get("/agents")
    assert idle.status_code == 303


async def test_a_session_ends_at_its_absolute_expiry_however_active(
    lib: Library, settings: Settings, database_url: str, db: Database
) -> None:
    key = await new_tenant(lib, "console-old")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        async with db.admin_tx() as conn:
            await conn.execute("UPDATE console_sessions SET expires_at = now()")
        old = await person.get("/agents")
    assert old.status_code == 303


async def test_every_console_answer_carries_the_strict_headers(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-headers")
    async with serve(settings, database_url) as served, Person(served) as person:
        answers = [await person.get("/sign-in"), await person.get("/agents")]
        await person.signed_in(key)
        answers.append(await person.get("/agents"))
    for answer in answers:
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "script-src" not in csp
        assert "unsafe-inline" not in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["x-content-type-options"] == "nosniff"


async def test_the_console_setting_off_mounts_no_console(
    lib: Library, settings: Settings, database_url: str
) -> None:
    off = dataclasses.replace(settings, console=False)
    async with serve(off, database_url) as served, Person(served) as person:
        answers = [await person.get("/sign-in"), await person.get("/agents")]
    assert [answer.status_code for answer in answers] == [404, 404]
