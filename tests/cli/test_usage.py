"""``cpersona-service usage``: a tenant's tokens and what each mechanism saved, as a table."""

from __future__ import annotations

import re

from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, new_tenant, run_cli, serve

CHAT = "Ann: we talked about the weather and what to cook tonight.\n" * 14


async def test_usage_prints_tokens_sent_and_saved_per_day_and_tool(
    lib: Library, settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served:
        client = Agent(served, await new_tenant(lib, "metered"))
        await client.call(
            "store", agent_id="a", message={"content": CHAT + "Bob: adopted Pixel.\n" + CHAT}
        )
        await client.call("store", agent_id="a", message={"content": "Pixel is a greyhound " * 40})
        for i in range(6):
            await client.call("store", agent_id="a", message={"content": f"Pixel note {i}"})
        args = {"agent_id": "a", "query": "Pixel", "deep": True}
        await client.call("recall", **args)  # previews and an excerpt
        await client.call("recall", **args, max_tokens=120)  # the budget leaves rows out
        await client.call("recall", **args, novel_only=True)
        await client.call("recall", **args, novel_only=True)  # short rows come back as stubs
    done = run_cli(database_url, "usage", "--tenant", "metered", "--days", "3")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "usage of tenant metered, last 3 days (UTC; tokens: chars/4)"
    header = lines[1].split("  ")
    assert [cell.strip() for cell in header if cell.strip()] == [
        "day", "tool", "calls", "failed", "tokens sent", "saved: previews", "excerpts",
        "budgets", "ledger", "saved",
    ]  # fmt: skip
    recall = next(line for line in lines if " recall " in f" {line} ")
    cells = recall.split()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", cells[0])
    assert cells[1] == "recall"
    calls, failed, sent, previews, excerpts, budgets, ledger = (
        int(cell.replace(",", "")) for cell in cells[2:9]
    )
    assert (calls, failed) == (4, 0)
    assert min(sent, previews, excerpts, budgets, ledger) > 0
    assert cells[9].endswith("%")
    assert lines[-1].split()[:2] == ["total", "12"]  # 4 recalls and 8 stores


def test_usage_of_an_unknown_tenant_fails_in_one_line(database_url: str) -> None:
    done = run_cli(database_url, "usage", "--tenant", "nobody")
    assert done.returncode == 1
    assert done.stderr.strip() == "cpersona-service: no tenant 'nobody'"


def test_usage_of_a_quiet_tenant_says_so(database_url: str) -> None:
    assert run_cli(database_url, "tenant", "create", "quiet").returncode == 0
    done = run_cli(database_url, "usage", "--tenant", "quiet")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1] == "no calls recorded"


def test_usage_rejects_a_bad_number_of_days(database_url: str) -> None:
    done = run_cli(database_url, "usage", "--tenant", "quiet", "--days", "0")
    assert done.returncode == 2
    assert "--days" in done.stderr
