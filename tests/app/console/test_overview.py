"""Usage (a server-drawn chart and a table), the queue, and the export download in the
console (docs/console.md)."""

from __future__ import annotations

import json
import re

from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from tests.app.console.client import Person, csrf_of
from tests.support import Agent, new_tenant, serve


async def test_usage_shows_thirty_days_as_an_svg_chart_and_a_table_with_the_queue(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-usage")
    async with serve(settings, database_url) as served:
        writer = Agent(served, key)
        await writer.call("store", agent_id="a", message={"content": "counted " + "c" * 900})
        await writer.call("recall", agent_id="a", query="counted")
    async with serve(settings, database_url) as served, Person(served) as person:
        await person.signed_in(key)
        page = (await person.page("/usage")).text
    assert page.count('<rect class="delivered"') == 30
    assert re.search(r"<title>\d{4}-\d\d-\d\d: [1-9]\d* tokens delivered", page)
    assert re.search(r"<td>store</td><td class=\"num\">1</td>", page)
    assert re.search(r"<td>recall</td><td class=\"num\">1</td>", page)
    assert "Embedding queue" in page
    assert "<script" not in page


async def test_usage_needs_what_a_tenant_wide_tool_needs(
    lib: Library, settings: Settings, database_url: str
) -> None:
    await new_tenant(lib, "console-usage2")
    everyday = await tenants.create_key(lib.db, "console-usage2", tool_set="everyday")
    one_agent = await tenants.create_key(lib.db, "console-usage2", grants={"a": "read-write"})
    async with serve(settings, database_url) as served:
        statuses = []
        for key in (everyday, one_agent):
            async with Person(served) as person:
                await person.signed_in(key)
                statuses.append((await person.get("/usage")).status_code)
    assert statuses == [404, 404]


async def test_export_streams_the_agents_jsonl_with_export_grants(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-export")
    reader = await tenants.create_key(lib.db, "console-export", grants={"*": "read"})
    stranger = await new_tenant(lib, "console-export-b")
    async with serve(settings, database_url) as served:
        writer = Agent(served, key)
        await writer.call("store", agent_id="a", message={"content": "export me"})
        await writer.call("store", agent_id="b", message={"content": "not this one"})
        async with Person(served) as person:
            await person.signed_in(key)
            download = await person.get("/export", agent="a")
        answers = []
        for other in (reader, stranger):
            async with Person(served) as person:
                await person.signed_in(other)
                answers.append(await person.get("/export", agent="a"))
    assert download.status_code == 200
    assert download.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in download.headers["content-disposition"]
    lines = [json.loads(line) for line in download.text.splitlines()]
    assert len(lines) >= 2
    assert "export me" in download.text
    assert "not this one" not in download.text
    assert answers[0].status_code == 404  # read-only: /v1/export needs read-write too
    assert answers[1].status_code == 200  # its own tenant's agent "a": empty
    assert "export me" not in answers[1].text


async def test_a_health_check_runs_check_health_as_the_tool_and_shows_no_content(
    lib: Library, settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "console-health")
    everyday = await tenants.create_key(lib.db, "console-health", tool_set="everyday")
    async with serve(settings, database_url) as served:
        await Agent(served, key).call(
            "store", agent_id="a", message={"content": "private words", "timestamp": "soon"}
        )
        async with Person(served) as person:
            await person.signed_in(key)
            token = csrf_of((await person.page("/usage")).text)
            report = await person.post("/health", {"csrf": token})
            forged = await person.post("/health", {})
        async with Person(served) as person:
            await person.signed_in(everyday)
            token = csrf_of((await person.page("/agents")).text)
            refused = await person.post("/health", {"csrf": token})
    async with lib.db.admin_tx() as conn:
        calls = await conn.fetchval("SELECT calls FROM usage_daily WHERE tool = 'check_health'")
    assert report.status_code == 200
    assert re.search(r"<h1>Health check: \w+</h1>", report.text)
    assert "private words" not in report.text
    assert forged.status_code == 403
    assert refused.status_code == 403
    assert calls == 2  # the refused call counts as a failed one, like on /mcp
