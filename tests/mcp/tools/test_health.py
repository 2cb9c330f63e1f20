"""check_health / deep_check / migrate_channel_axis over MCP/HTTP (docs/health.md, "check_health";
docs/health.md, "deep_check"; docs/health.md, "migrate_channel_axis"), acceptance 73, 77, 78, 79,
91, and the tenant wall around all three.
"""

from __future__ import annotations

from typing import Any

from service.memory import health, tenants
from service.memory.library import Library
from service.models import TenantId
from tests.seeds import Seed, unit
from tests.support import Agent, Served, new_tenant

PAUSED_FIX = "no-persist mode active — fix downgraded to fix=False"


async def seed_of(lib: Library, slug: str) -> Seed:
    rows = {row.slug: row for row in await tenants.list_tenants(lib.db)}
    return Seed(lib.db, TenantId(rows[slug].id))


def only(body: dict[str, Any], check: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [item for item in body["issues"] if item["check"] == check]
    assert len(found) == 1, body["issues"]
    return found[0]


async def test_the_maintenance_tools_are_listed(client: Agent) -> None:
    names = await client.tool_names()
    assert names[-3:] == ["check_health", "deep_check", "migrate_channel_axis"]


async def test_unknown_check_names_fail_with_every_valid_name(client: Agent) -> None:
    body = await client.call("check_health", checks=["bogus"])
    assert body["ok"] is False
    assert body["unknown_checks"] == ["bogus"]
    assert body["valid_checks"] == list(health.CHECK_NAMES)
    assert len(body["valid_checks"]) == 29  # supersession and missing_passages joined
    assert body["error"].startswith("unknown check name(s): bogus")


async def test_an_unknown_check_name_answers_cpersona_26s_whole_shape(client: Agent) -> None:
    """CPersona 2.6: ``{ok: false, error, unknown_checks, valid_checks, checks_run: []}``, keys
    in that order (nothing ran)."""
    body = await client.call("check_health", checks=["bogus", "duplicate_content"])
    assert list(body) == ["ok", "error", "unknown_checks", "valid_checks", "checks_run"]
    assert body["unknown_checks"] == ["bogus"]
    assert body["checks_run"] == []


async def test_an_info_only_tenant_is_healthy_and_still_lists_its_issues(client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "Ada likes tea"})
    await client.call("store", agent_id="a", message={"content": "Ada lives in Paris"})
    body = await client.call("check_health")
    assert body["status"] == "healthy"
    assert body["issues"]
    assert {item["severity"] for item in body["issues"]} == {"info"}
    assert body["checks_run"] == list(health.CHECK_NAMES)
    assert body["fixed"] is False
    assert body["total_memories"] == 2
    assert body["stats"]["memories"] == 2
    assert body["stats"]["axes"] == {"project_id": {"(global)": 2}, "channel": {"(global)": 2}}
    assert body["stats"]["db_size_bytes"] > 0
    assert "agent_memories" not in body["stats"]
    scoped = await client.call("check_health", agent_id="a", checks=["missing_profile"])
    assert scoped["stats"]["agent_memories"] == 2
    assert scoped["checks_run"] == ["missing_profile"]


async def test_fix_removes_a_seeded_annotation_and_leaves_the_locked_row(
    lib: Library, client: Agent
) -> None:
    await client.call("store", agent_id="a", message={"content": "warm-up"})
    seed = await seed_of(lib, "acme")
    annotated = await seed.memory(
        "[Memory from 2026-05-01 agent a] Ada likes tea", embedding=unit(384)
    )
    locked = await seed.memory("[Memory from old] do not touch", locked=True, embedding=unit(384))
    before = await client.call("check_health", checks=["memory_annotation"])
    assert only(before, "memory_annotation")["repairable"] == 1
    body = await client.call("check_health", fix=True)
    assert body["fixed"] is True
    assert only(body, "memory_annotation")["fixed"] == 1
    row = await seed.memory_row(annotated)
    assert row is not None
    assert row["content"] == "Ada likes tea"
    assert row["embedding"] is None
    untouched = await seed.memory_row(locked)
    assert untouched is not None
    assert untouched["content"] == "[Memory from old] do not touch"
    assert untouched["embedding"] is not None
    listed = await client.call("list_memories", agent_id="a")
    assert "Ada likes tea" in [m["content"] for m in listed["memories"]]


async def test_under_a_pause_fix_and_migration_only_report(lib: Library, client: Agent) -> None:
    await client.call("store", agent_id="a", message={"content": "warm-up"})
    seed = await seed_of(lib, "acme")
    empty = await seed.memory("   ")
    discord = await seed.memory("bridged", channel="discord", metadata={"session_id": "42:7:0"})
    short = await seed.memory("hi", agent="b")
    await client.call("pause_persistence", ttl_seconds=60)
    body = await client.call("check_health", fix=True)
    assert body["fixed"] is False
    assert body["repairs_skipped"] is True
    assert body["repairs_skip_reason"] == PAUSED_FIX
    assert only(body, "empty_content")["repairable"] == 1
    assert await seed.memory_row(empty) is not None
    moved = await client.call("migrate_channel_axis", dry_run=False)
    assert moved["dry_run"] is True
    assert moved["repairs_skipped"] is True
    assert "persisted" not in moved
    assert (moved["recoverable_total"], moved["migrated"]) == (1, 0)
    assert (await seed.memory_row(discord) or {})["channel"] == "discord"
    deep = await client.call("deep_check", agent_id="b", fix=True, checks=["short_content"])
    assert (deep["fixed"], deep["repairs_skipped"]) == (False, True)
    assert "fixed" not in deep["results"]["short_content"]
    assert await seed.memory_row(short) is not None
    await client.call("resume_persistence")
    after = await client.call("check_health", fix=True, checks=["empty_content"])
    assert after["fixed"] is True
    assert "repairs_skipped" not in after
    assert await seed.memory_row(empty) is None


async def test_reading_needs_read_and_repairing_needs_read_write(
    lib: Library, served: Served
) -> None:
    reader = Agent(served, await new_tenant(lib, "readers", {"*": "read"}))
    assert (await reader.call("check_health"))["status"] == "healthy"
    assert (await reader.call("deep_check", agent_id="a"))["agent_id"] == "a"
    assert await reader.call("check_health", fix=True) == {
        "ok": False,
        "error": "permission_denied",
        "tool": "check_health",
        "agent_id": "*",
        "required": "read-write",
        "client_id": "readers-key",
    }
    denied = await reader.call("deep_check", agent_id="a", fix=True)
    assert (denied["error"], denied["agent_id"]) == ("permission_denied", "a")
    migrate = await reader.call("migrate_channel_axis")
    assert (migrate["error"], migrate["required"]) == ("permission_denied", "read-write")
    partial = Agent(served, await new_tenant(lib, "partial", {"*": "read-write", "prod": "none"}))
    sweep = await partial.call("check_health")
    assert (sweep["error"], sweep["agent_id"]) == ("permission_denied", "*")
    assert (await partial.call("check_health", agent_id="dev"))["status"] == "healthy"


async def test_tenant_b_never_counts_or_repairs_tenant_a_rows(lib: Library, served: Served) -> None:
    a = Agent(served, await new_tenant(lib, "tenant-a"))
    b = Agent(served, await new_tenant(lib, "tenant-b"))
    await a.call("store", agent_id="shared", message={"content": "A's fact"})
    await b.call("store", agent_id="shared", message={"content": "B's fact"})
    seed = await seed_of(lib, "tenant-a")
    rows = [
        await seed.memory("[Memory from x] A annotated", agent="shared"),
        await seed.memory("   ", agent="shared"),
        await seed.memory("dup", agent="shared", channel="c1"),
        await seed.memory("dup", agent="shared", channel="c2"),
        await seed.memory("ok", agent="shared", channel="discord", metadata={"session_id": "9:1"}),
        await seed.memory(
            "[bob] hi", agent="shared", source={"type": "User", "id": "", "name": ""}
        ),
    ]
    before = [await seed.memory_row(row) for row in rows]
    body = await b.call("check_health", fix=True)
    assert body["total_memories"] == 1
    assert body["status"] == "healthy"
    assert {item["check"] for item in body["issues"]} <= {
        "anonymous_source",
        "missing_profile",
        "null_embedding",
    }
    scoped = await b.call("check_health", agent_id="shared", fix=True)
    assert scoped["stats"]["agent_memories"] == 1
    deep = await b.call("deep_check", agent_id="shared", fix=True)
    assert deep["results"]["short_content"] == {"count": 0, "fixed": 0}
    assert deep["results"]["anonymous_source"]["recoverable"] == 0
    moved = await b.call("migrate_channel_axis", dry_run=False, globalize_unrecoverable=True)
    assert (moved["recoverable_total"], moved["unrecoverable_total"], moved["migrated"]) == (
        0,
        0,
        0,
    )
    assert [await seed.memory_row(row) for row in rows] == before
    mine = await a.call("check_health")
    assert only(mine, "empty_content")["count"] == 1
    assert only(mine, "duplicate_content")["groups"] == 1
