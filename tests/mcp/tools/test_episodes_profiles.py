"""Profiles, episodes, listings and the queue status over MCP/HTTP: acceptance 65-70."""

from __future__ import annotations

from service.memory import tenants
from service.memory.library import Library
from service.models import TenantId
from tests.seeds import Seed
from tests.support import Agent


async def test_profile_round_trip_blank_and_cap(client: Agent) -> None:
    assert await client.call("get_profile", agent_id="a") == {"profile": ""}
    assert await client.call("update_profile", agent_id="a", profile="likes tea") == {
        "ok": True,
        "profiles_updated": 1,
    }
    blank = await client.call("update_profile", agent_id="a", profile="   ")
    empty = await client.call("update_profile", agent_id="a", profile="")
    assert blank == {"ok": True, "profiles_updated": 0, "reason": "empty after sanitization"}
    assert empty == {"ok": True, "profiles_updated": 0, "reason": "empty profile"}
    assert await client.call("get_profile", agent_id="a") == {"profile": "likes tea"}
    long = await client.call("update_profile", agent_id="a", profile="p" * 2_500)
    assert long == {"ok": True, "profiles_updated": 1, "truncated": True}
    assert await client.call("get_profile", agent_id="a") == {"profile": "p" * 2_000}
    assert await client.call("get_profile", agent_id="b") == {"profile": ""}


async def test_archive_episode_refusals(client: Agent) -> None:
    empty = await client.call("archive_episode", agent_id="a", summary="")
    blank = await client.call("archive_episode", agent_id="a", summary="   ")
    assert empty["ok"] is False
    assert empty["episode_id"] is None
    assert empty["error"].startswith("summary is required: server-side")
    assert blank == {
        "ok": False,
        "episode_id": None,
        "error": "summary is required to archive an episode",
    }
    assert (await client.call("list_episodes"))["count"] == 0


async def test_archive_is_not_idempotent_and_records_the_history_span(client: Agent) -> None:
    history = [
        {"role": "user", "content": "hi", "timestamp": "2026-01-02T00:00:00Z"},
        {"role": "assistant", "content": "yo", "timestamp": "2026-01-01T00:00:00Z"},
        {"role": "user", "content": "no time"},
    ]
    first = await client.call(
        "archive_episode", agent_id="a", summary="s", history=history, keywords="k", resolved=None
    )
    second = await client.call("archive_episode", agent_id="a", summary="s", history=history)
    assert first["ok"]
    assert second["ok"]
    assert first["episode_id"] != second["episode_id"]
    listed = await client.call("list_episodes", agent_id="a")
    assert listed["count"] == 2
    row = listed["episodes"][0]
    assert set(row) == {
        "id",
        "agent_id",
        "project_id",
        "summary",
        "keywords",
        "start_time",
        "end_time",
        "created_at",
    }
    assert (row["start_time"], row["end_time"]) == ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")


async def test_list_memories_spans_agents_clamps_limit_and_hides_msg_id(client: Agent) -> None:
    for i in range(3):
        await client.call(
            "store", agent_id=f"agent{i}", message={"id": f"m{i}", "content": f"c{i}"}
        )
    everyone = await client.call("list_memories")
    assert everyone["count"] == 3
    assert [row["content"] for row in everyone["memories"]] == ["c2", "c1", "c0"]
    assert all("msg_id" not in row for row in everyone["memories"])
    assert set(everyone["memories"][0]) == {
        "id",
        "agent_id",
        "project_id",
        "content",
        "source",
        "timestamp",
        "created_at",
        "locked",
        "channel",
    }
    assert (await client.call("list_memories", limit=0)) == {"memories": [], "count": 0}


async def test_list_limit_is_clamped_to_500(client: Agent) -> None:
    for i in range(3):
        await client.call("store", agent_id="a", message={"content": f"row {i}"})
    body = await client.call("list_memories", agent_id="a", limit=1000)
    assert body["count"] == 3
    negative = await client.call("list_memories", agent_id="a", limit=-4)
    assert negative == {"memories": [], "count": 0}


async def test_project_read_rule_on_lists(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "global"})
    await client.call("store", agent_id="a", project_id="X", message={"content": "in x"})
    await client.call("store", agent_id="a", project_id="Y", message={"content": "in y"})

    async def contents(**args: str) -> set[str]:
        return {r["content"] for r in (await client.call("list_memories", **args))["memories"]}

    assert await contents() == {"global", "in x", "in y"}
    assert await contents(project_id="") == {"global"}
    assert await contents(project_id="X") == {"global", "in x"}


async def test_queue_status_reports_no_background_queue(client: Agent) -> None:
    assert await client.call("get_queue_status") == {"enabled": False, "pending": 0}


async def test_a_row_cap_that_withholds_rows_says_budget_rows(lib: Library, client: Agent) -> None:
    """CPersona 2.6: past the row cap (500 memories, 200 episodes) a listing that asked for
    more and left rows behind carries ``budget_rows: <cap>``; at or under the cap, or when
    nothing was left behind, it does not (docs/tools.md, "List budgets")."""
    await client.call("store", agent_id="a", message={"content": "first"})
    seed = Seed(lib.db, TenantId((await tenants.list_tenants(lib.db))[0].id))
    agent = await seed.agent("a")
    await seed.fetch(
        "INSERT INTO memories (tenant_id, agent_id, content) "
        "SELECT $1, $2, 'row ' || n FROM generate_series(1, 500) AS n RETURNING id",
        seed.tenant_id,
        agent,
    )
    await seed.fetch(
        "INSERT INTO episodes (tenant_id, agent_id, summary) "
        "SELECT $1, $2, 'episode ' || n FROM generate_series(1, 201) AS n RETURNING id",
        seed.tenant_id,
        agent,
    )
    capped = await client.call("list_memories", agent_id="a", limit=1000)
    assert (capped["count"], capped["budget_rows"]) == (500, 500)
    assert list(capped)[-1] == "budget_rows"
    assert "budget_rows" not in await client.call("list_memories", agent_id="a", limit=500)
    episodes = await client.call("list_episodes", agent_id="a", limit=201)
    assert (episodes["count"], episodes["budget_rows"]) == (200, 200)
    assert "budget_rows" not in await client.call("list_episodes", agent_id="a", limit=200)
    assert "budget_rows" not in await client.call("list_episodes", agent_id="b", limit=1000)
