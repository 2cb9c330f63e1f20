"""deep_check (docs/health.md, "deep_check") and migrate_channel_axis
(docs/health.md, "migrate_channel_axis") on seeded rows."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from types import MappingProxyType
from typing import Any

import pytest

from service.mcp.render import health as render_health
from service.memory import health
from service.memory.health import channel_axis, deep
from service.memory.library import Library
from tests.seeds import Seed, WidthOnly, new_seed, unit
from tests.support import Agent


async def _deep(lib: Library, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """deep_check's report as the tool answers it: each check's findings are an ordered
    object of their own shape, so they are asserted on key by key."""
    return render_health.deep_report(await health.deep_check(lib, *args, **kwargs))


def near(width: int, angle: float) -> list[float]:
    """A unit vector ``angle`` radians away from unit(width, 0)."""
    vector = [0.0] * width
    vector[0], vector[1] = math.cos(angle), math.sin(angle)
    return vector


async def test_anonymous_names_are_recovered_from_a_prefix_but_never_on_locked_rows(
    lib: Library,
) -> None:
    seed = await new_seed(lib)
    sentinel = {"type": "User", "id": "", "name": ""}
    bob = await seed.memory("[bob] likes tea", source=sentinel)
    carol = await seed.memory("[carol] locked", source=sentinel, locked=True)
    await seed.memory("no name here", source=sentinel)
    await seed.memory("[dave] attributed", source={"type": "User", "id": "1", "name": "dave"})
    report = await _deep(lib, seed.tenant_id, "a", checks=["anonymous_source"])
    found = report["results"]["anonymous_source"]
    assert (found["recoverable"], found["unrecoverable"], found["unfixable_locked"]) == (2, 1, 1)
    assert found["samples"] == [
        {"id": bob, "recovered_name": "bob"},
        {"id": carol, "recovered_name": "carol"},
    ]
    fixed = await _deep(lib, seed.tenant_id, "a", fix=True, checks=["anonymous_source"])
    assert fixed["results"]["anonymous_source"]["fixed"] == 1
    assert (await seed.memory_row(bob) or {})["source"] == {"type": "User", "id": "", "name": "bob"}
    assert (await seed.memory_row(carol) or {})["source"] == sentinel


async def test_deep_check_reports_typed_records(lib: Library) -> None:
    seed = await new_seed(lib)
    sentinel = {"type": "User", "id": "", "name": ""}
    bob = await seed.memory("[bob] likes tea", source=sentinel)
    tiny = await seed.memory("hi")
    report = await health.deep_check(
        lib, seed.tenant_id, "a", checks=["anonymous_source", "short_content", "stale_profile"]
    )
    assert (report.agent_id, report.fixed, report.repairs_skip_reason) == ("a", False, None)
    assert report.checks_run == ("anonymous_source", "short_content", "stale_profile")
    names, short, stale = (slot.findings for slot in report.results)
    assert names == deep.AnonymousSources(
        recoverable=1,
        unrecoverable=0,
        fixed=None,
        unfixable_locked=0,
        samples=(deep.RecoveredName(id=bob, recovered_name="bob"),),
        unrecoverable_samples=(),
    )
    assert short == deep.ShortContent(
        count=1, fixed=None, samples=(deep.ShortRow(id=tiny, content="hi"),)
    )
    assert stale == deep.StaleProfile(count=0, threshold_days=30, last_updated=None)


async def test_short_content_fix_deletes_only_unlocked_rows(lib: Library) -> None:
    seed = await new_seed(lib)
    tiny = await seed.memory("hi")
    padded = await seed.memory("   ok   ")
    locked = await seed.memory("yo", locked=True)
    await seed.memory("long enough")
    body = await _deep(lib, seed.tenant_id, "a", fix=True, checks=["short_content"])
    result = body["results"]["short_content"]
    assert (result["count"], result["fixed"]) == (3, 2)
    assert [sample["id"] for sample in result["samples"]] == [tiny, padded, locked]
    assert await seed.memory_row(tiny) is None
    assert await seed.memory_row(locked) is not None


async def test_stale_profiles_and_orphaned_episodes(lib: Library) -> None:
    seed = await new_seed(lib)
    agent = await seed.agent("a")
    async with lib.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO profiles (tenant_id, agent_id, content, updated_at) "
            "VALUES ($1, $2, 'old', now() - interval '40 days')",
            seed.tenant_id,
            agent,
        )
    await seed.memory(
        "in january",
        timestamp_text="2026-01-10T12:00:00+00:00",
        timestamp_at=datetime.fromisoformat("2026-01-10T12:00:00+00:00"),
    )
    await seed.episode("covers january", start_time="2026-01-01T00:00:00Z", end_time="2026-01-31")
    orphan = await seed.episode("march", start_time="2026-03-01T00:00:00Z", end_time="2026-03-02")
    await seed.episode("broken", start_time="soon", end_time="later")
    body = await _deep(lib, seed.tenant_id, "a")
    assert body["results"]["stale_profile"]["count"] == 1
    assert body["results"]["stale_profile"]["threshold_days"] == 30
    orphans = body["results"]["orphaned_episodes"]
    assert (orphans["count"], orphans["unparseable"]) == (1, 1)
    assert orphans["samples"][0]["id"] == orphan


async def _calibrate(seed: Seed, agent: str | None, days_ago: int, version: str | None) -> None:
    agent_id = None if agent is None else await seed.agent(agent)
    async with seed.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO recall_calibration (tenant_id, agent_id, vector_threshold, "
            "scoring_version, calibrated_at) "
            "VALUES ($1, $2, 0.4, $3, now() - make_interval(days => $4))",
            seed.tenant_id,
            agent_id,
            version,
            days_ago,
        )


async def test_calibration_staleness_reads_recall_calibration(lib: Library) -> None:
    seed = await new_seed(lib)
    off = await _deep(lib, seed.tenant_id, "a", checks=["calibration_staleness"])
    assert off["results"]["calibration_staleness"]["status"] == "not_applicable"
    lib = dataclasses.replace(lib, embedder=WidthOnly())
    agent = await seed.agent("a")
    async with lib.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO memories (tenant_id, agent_id, content, embedding) "
            "SELECT $1, $2, 'row ' || n, $3 FROM generate_series(1, 50) AS n",
            seed.tenant_id,
            agent,
            unit(384),
        )

    async def status() -> dict[str, Any]:
        body = await _deep(lib, seed.tenant_id, "a", checks=["calibration_staleness"])
        result: dict[str, Any] = body["results"]["calibration_staleness"]
        return result

    assert (await status())["status"] == "never_calibrated"
    await _calibrate(seed, None, 100, None)
    assert (await status()) | {"age_days": 0} == {
        "status": "stale",
        "age_days": 0,
        "threshold_days": 90,
        "scope": "tenant",
        "hint": "run calibrate_threshold",
    }
    await _calibrate(seed, "a", 2, "an-older-scoring")
    assert (await status())["status"] == "stale_scoring_version"
    async with lib.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "UPDATE recall_calibration SET scoring_version = $1", deep.SCORING_VERSION
        )
    assert (await status()) == {"status": "ok", "age_days": 2, "scope": "agent"}


async def test_near_duplicates_are_found_in_the_database_without_exact_copies(
    lib: Library,
) -> None:
    seed = await new_seed(lib)
    first = await seed.memory("Ada likes tea", embedding=near(384, 0.0))
    second = await seed.memory("Ada likes tea a lot", embedding=near(384, 0.1))
    copy = await seed.memory("Ada likes tea", channel="c2", embedding=near(384, 0.0))
    await seed.memory("unrelated", embedding=near(384, 1.2))
    await seed.memory("other width", embedding=unit(1536))
    body = await _deep(lib, seed.tenant_id, "a", checks=["near_duplicate"])
    result = body["results"]["near_duplicate"]
    assert (result["pairs"], result["rows_scanned"], result["skipped_other_width"]) == (2, 5, 1)
    assert [(pair["id_a"], pair["id_b"]) for pair in result["samples"]] == [
        (first, second),
        (second, copy),
    ]
    assert result["samples"][0]["cosine"] == round(math.cos(0.1), 4)
    assert result["samples"][0]["preview_b"] == "Ada likes tea a lot"


async def test_unknown_names_are_skipped_and_a_crash_stays_in_its_slot(
    lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(conn: Any, scope: Any, fix: bool) -> dict[str, Any]:
        await conn.execute("SELECT 1/0")
        return {}

    monkeypatch.setattr(
        deep, "DEEP_CHECKS", MappingProxyType({**deep.DEEP_CHECKS, "stale_profile": boom})
    )
    seed = await new_seed(lib)
    tiny = await seed.memory("hi")
    body = await _deep(
        lib, seed.tenant_id, "a", fix=True, checks=["bogus", "stale_profile", "short_content"]
    )
    assert body["checks_run"] == ["stale_profile", "short_content"]
    assert list(body["results"]) == ["stale_profile", "short_content"]
    assert "DivisionByZero" in body["results"]["stale_profile"]["error"]
    assert body["results"]["short_content"]["fixed"] == 1
    assert await seed.memory_row(tiny) is None


async def test_deep_check_matches_the_agent_exactly(client: Agent) -> None:
    await client.call("store", agent_id="", message={"content": "hi"})
    await client.call("store", agent_id="other", message={"content": "yo"})
    empty = await client.call("deep_check", agent_id="", checks=["short_content"])
    assert empty["results"]["short_content"]["count"] == 1
    assert empty["results"]["short_content"]["samples"][0]["content"] == "hi"
    assert empty["fixed"] is False
    everything = await client.call("deep_check", agent_id="other")
    assert everything["checks_run"] == list(health.DEEP_CHECKS)


async def _discord(seed: Seed, content: str, session: Any = None, **fields: Any) -> int:
    metadata = {} if session is None else {"session_id": session}
    fields.setdefault("metadata", metadata)
    return await seed.memory(content, channel="discord", **fields)


async def test_migrate_channel_axis_reports_then_moves_recoverable_rows(lib: Library) -> None:
    seed = await new_seed(lib)
    user = await _discord(seed, "user-thread", "111:222:0")
    await _discord(seed, "thread shared", "111:shared")
    await _discord(seed, "other channel", "333:444:1")
    await _discord(seed, "no session")
    await _discord(seed, "non snowflake", "chat:abc")
    odd = await _discord(seed, "odd metadata", metadata=[1])
    await _discord(seed, "elsewhere", "555:1", agent="b")
    report = await channel_axis.migrate_channel_axis(lib, seed.tenant_id, "a")
    assert dataclasses.replace(report, samples=()) == channel_axis.ChannelMigration(
        agent_id="a",
        dry_run=True,
        recoverable_total=3,
        recoverable_by_channel=({"channel": "111", "count": 2}, {"channel": "333", "count": 1}),
        unrecoverable_total=3,
        invalid_metadata_total=1,
        invalid_metadata_ids=(odd,),
        globalize_unrecoverable=False,
        migrated=0,
        globalized=0,
        samples=(),
        skipped_locked=0,
    )
    assert report.samples[0] == {
        "id": user,
        "recovered_channel": "111",
        "session_id": "111:222:0",
    }
    assert (await seed.memory_row(user) or {})["channel"] == "discord"
    done = await channel_axis.migrate_channel_axis(lib, seed.tenant_id, "a", dry_run=False)
    assert (done.dry_run, done.migrated) == (False, 3)
    assert (await seed.memory_row(user) or {})["channel"] == "111"
    again = await channel_axis.migrate_channel_axis(lib, seed.tenant_id, "a", dry_run=False)
    assert (again.recoverable_total, again.migrated) == (0, 0)
    everyone = await channel_axis.migrate_channel_axis(lib, seed.tenant_id)
    assert everyone.recoverable_by_channel == ({"channel": "555", "count": 1},)


async def test_migration_skips_conflicts_and_locked_rows_and_globalizes(lib: Library) -> None:
    seed = await new_seed(lib)
    await seed.memory("same text", channel="5")
    clash = await _discord(seed, "same text", "5:1")
    locked = await _discord(seed, "locked", "6:1", locked=True)
    free = await _discord(seed, "free", "7:1")
    await seed.memory("global twin", channel="")
    twin = await _discord(seed, "global twin")
    loose = await _discord(seed, "loose")
    body = await channel_axis.migrate_channel_axis(
        lib, seed.tenant_id, dry_run=False, globalize_unrecoverable=True
    )
    assert (body.recoverable_total, body.migrated, body.skipped_locked) == (3, 1, 1)
    assert (body.unrecoverable_total, body.globalized) == (2, 1)
    channels = {row: (await seed.memory_row(row) or {})["channel"] for row in (clash, locked, free)}
    assert channels == {clash: "discord", locked: "discord", free: "7"}
    assert (await seed.memory_row(twin) or {})["channel"] == "discord"
    assert (await seed.memory_row(loose) or {})["channel"] == ""


async def test_migrate_channel_axis_over_mcp(lib: Library, client: Agent) -> None:
    await client.call(
        "store",
        agent_id="a",
        channel="discord",
        message={"content": "bridged", "metadata": {"session_id": "123:9:0"}},
    )
    dry = await client.call("migrate_channel_axis")
    assert (dry["dry_run"], dry["recoverable_total"], dry["migrated"]) == (True, 1, 0)
    done = await client.call("migrate_channel_axis", agent_id="a", dry_run=False)
    assert (done["dry_run"], done["migrated"]) == (False, 1)
    assert "repairs_skipped" not in done
    recalled = await client.call("list_memories", agent_id="a")
    assert recalled["memories"][0]["channel"] == "123"
