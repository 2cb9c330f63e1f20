"""Operators (``key create --role operator``): no tenant, the console's tenants view with
counts, usage and queue health, never memory content, and nothing of a tenant's pages
(docs/console.md, "Operators")."""

from __future__ import annotations

import httpx

from service.config import Settings
from service.memory import operators, tenants
from service.memory.library import Library
from tests.app.console.client import Person, csrf_of
from tests.support import Agent, new_tenant, run_cli, serve

SECRET = "the launch code is 0000"


async def test_key_create_role_operator_makes_a_key_of_no_tenant(database_url: str) -> None:
    made = run_cli(database_url, "key", "create", "--role", "operator", "--label", "ops")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("cpk_")
    refused = run_cli(database_url, "key", "create", "--role", "operator", "--tenant", "x")
    assert refused.returncode != 0
    assert "--role operator" in refused.stderr
    missing = run_cli(database_url, "key", "create")
    assert missing.returncode != 0
    assert "--tenant" in missing.stderr
    key_id = made.stdout.strip()[: tenants.PREFIX_LENGTH]
    revoked = run_cli(database_url, "key", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr


async def test_an_operator_sees_every_tenants_aggregates_and_never_content(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key_a = await new_tenant(lib, "ops-alpha")
    await new_tenant(lib, "ops-beta")
    operator = await operators.create_operator_key(lib.db, label="on call")
    async with serve(settings, database_url) as served, Person(served) as person:
        writer = Agent(served, key_a)
        await writer.call("store", agent_id="a", message={"content": SECRET})
        await writer.call("store", agent_id="b", message={"content": "another fact"})
        answer = await person.sign_in(operator)
        assert answer.headers["location"] == "/console/tenants"
        page = (await person.page("/tenants")).text
        reached = [
            await person.get("/agents"),
            await person.get("/agent", agent="a"),
            await person.get("/search", agent="a", q="launch"),
            await person.get("/record", agent="a", ref="mem:1"),
            await person.get("/export", agent="a"),
            await person.get("/usage"),
        ]
        posted = await person.post(
            "/record/delete",
            {"csrf": csrf_of(page), "agent": "a", "ref": "mem:1", "confirmed": "yes"},
        )
        kept = await writer.call("get_contents", agent_id="a", refs=["mem:1"])
    assert "ops-alpha" in page
    assert "ops-beta" in page
    assert '<th scope="row" class="text">ops-alpha</th>\n      <td class="num">2</td>' in page
    assert SECRET not in page
    assert all(answer.status_code == 303 for answer in reached)
    assert all(answer.headers["location"] == "/console/tenants" for answer in reached)
    assert posted.status_code == 303
    assert kept["items"][0]["content"] == SECRET


async def test_a_tenant_key_has_no_operator_view_and_an_operator_key_no_mcp(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "ops-gamma")
    operator = await operators.create_operator_key(lib.db)
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        tenants_page = await person.get("/tenants")
        async with httpx.AsyncClient() as http:
            mcp = await http.post(
                served.mcp_url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={
                    "authorization": f"Bearer {operator}",
                    "accept": "application/json, text/event-stream",
                },
            )
    assert tenants_page.status_code == 404
    assert mcp.status_code == 401


async def test_revoking_an_operator_key_ends_its_sessions(
    lib: Library, settings: Settings, database_url: str
) -> None:
    operator = await operators.create_operator_key(lib.db)
    async with serve(settings, database_url) as served, Person(served) as person:
        answer = await person.sign_in(operator)
        assert answer.status_code == 303
        assert (await person.get("/tenants")).status_code == 200
        await operators.revoke_any_key(lib.db, operator[: tenants.PREFIX_LENGTH])
        after = await person.get("/tenants")
        out_token = await person.get("/sign-in")
    assert after.status_code == 303
    assert after.headers["location"] == "/console/sign-in"
    assert out_token.status_code == 200
