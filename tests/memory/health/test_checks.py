"""check_health at the library level, on rows seeded directly in the database (the
write paths refuse most of these shapes): (docs/health.md, "check_health"), acceptance 77-79.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest

from service.errors import Refused
from service.mcp.render import health as render_health
from service.memory import health
from service.memory.health import registry
from service.memory.health.base import Check, Repairs, SeverityCounts
from service.memory.library import Library
from tests.seeds import WidthOnly, new_seed, unit


async def _checked(lib: Library, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """check_health's report as the tool answers it: each issue's findings are an ordered
    object of the check's own shape, so they are asserted on key by key."""
    return render_health.health_report(await health.check_health(lib, *args, **kwargs))


def issue(body: dict[str, Any], check: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [item for item in body["issues"] if item["check"] == check]
    assert len(found) == 1, (check, body["issues"])
    return found[0]


def checks_of(body: dict[str, Any]) -> set[str]:
    return {item["check"] for item in body["issues"]}


async def test_a_clean_tenant_is_healthy_with_every_check_run(lib: Library) -> None:
    seed = await new_seed(lib)
    body = await _checked(lib, seed.tenant_id)
    assert body["status"] == "healthy"
    assert body["issues"] == []
    assert body["checks_run"] == list(health.CHECK_NAMES)
    assert len(body["checks_run"]) == 29  # supersession and missing_passages joined
    assert body["severity_summary"] == {"critical": 0, "warn": 0, "info": 0}
    assert body["stats"] == {
        "db_size_bytes": 0,
        "memories": 0,
        "episodes": 0,
        "profiles": 0,
        "pending_tasks": 0,
        "axes": {"project_id": {}, "channel": {}},
    }


async def test_the_report_is_a_typed_record(lib: Library) -> None:
    seed = await new_seed(lib)
    await seed.memory("[Memory from 2026-01-01] Ada likes tea")
    report = await health.check_health(lib, seed.tenant_id, checks=["memory_annotation"])
    assert report.checks_run == ("memory_annotation",)
    assert (report.status, report.fixed, report.repairs_skip_reason) == ("healthy", False, None)
    assert report.severity_summary == SeverityCounts(info=1)
    [found] = report.issues
    assert (found.type, found.severity, found.check) == (
        "memory_annotation",
        "info",
        "memory_annotation",
    )
    assert found.findings == {"count": 1, "repairable": 1}
    assert (found.repairs, found.needs_human_review, found.hint) == (None, False, None)
    assert (report.stats.memories, report.stats.per_agent) == (1, False)
    fixed = await health.check_health(lib, seed.tenant_id, fix=True, checks=["memory_annotation"])
    assert fixed.issues[0].repairs == Repairs(fixed=1, rewritten=1, deleted=0)
    assert fixed.severity_summary == SeverityCounts()


async def test_unknown_names_fail_and_spec_names_alias_ours(lib: Library) -> None:
    seed = await new_seed(lib)
    with pytest.raises(Refused) as failure:
        await _checked(lib, seed.tenant_id, checks=["bogus", "empty_content"])
    assert failure.value.details["unknown_checks"] == ["bogus"]
    assert failure.value.details["valid_checks"] == list(health.CHECK_NAMES)
    assert "bogus" in failure.value.message
    aliased = await _checked(
        lib, seed.tenant_id, checks=["fts_integrity", "sqlite_integrity", "schema_version"]
    )
    assert aliased["checks_run"] == [
        "search_index_validity",
        "index_validity",
        "migrations_at_head",
    ]


async def test_annotation_fix_strips_it_clears_the_vector_and_spares_locked_rows(
    lib: Library,
) -> None:
    seed = await new_seed(lib)
    lib = dataclasses.replace(lib, embedder=WidthOnly())
    plain = await seed.memory("[Memory from 2026-01-01] Ada likes tea", embedding=unit(384))
    locked = await seed.memory("[Memory from x] locked fact", locked=True, embedding=unit(384))
    report = await _checked(lib, seed.tenant_id, checks=["memory_annotation"])
    assert issue(report, "memory_annotation") == {
        "type": "memory_annotation",
        "severity": "info",
        "check": "memory_annotation",
        "count": 2,
        "repairable": 1,
    }
    fixed = await _checked(lib, seed.tenant_id, fix=True, checks=["memory_annotation"])
    assert fixed["fixed"] is True
    assert issue(fixed, "memory_annotation")["rewritten"] == 1
    row = await seed.memory_row(plain)
    assert row is not None
    assert row["content"] == "Ada likes tea"
    assert row["embedding"] is None
    jobs = await seed.fetch("SELECT item_kind, item_id FROM embedding_jobs")
    assert jobs == [{"item_kind": "mem", "item_id": plain}]
    kept = await seed.memory_row(locked)
    assert kept is not None
    assert kept["content"] == "[Memory from x] locked fact"
    assert kept["embedding"] is not None
    residual = issue(fixed, "memory_annotation")  # issues are the fix run's ...
    assert residual["repairable"] == 1
    assert fixed["severity_summary"] == {
        "critical": 0,
        "warn": 0,
        "info": 1,
    }  # ... the rest remains


async def test_rewrite_that_would_duplicate_deletes_the_unlocked_row(lib: Library) -> None:
    seed = await new_seed(lib)
    keep = await seed.memory("hello there")
    echo = await seed.memory("[Memory from y] hello there")
    mention = await seed.memory("<@123>")
    body = await _checked(
        lib, seed.tenant_id, fix=True, checks=["memory_annotation", "discord_mention"]
    )
    assert issue(body, "memory_annotation")["deleted"] == 1
    assert issue(body, "discord_mention")["deleted"] == 1  # nothing left but the mention
    assert await seed.memory_row(echo) is None
    assert await seed.memory_row(mention) is None
    assert (await seed.memory_row(keep) or {})["content"] == "hello there"


async def test_duplicates_keep_the_channel_less_row_and_never_delete_locked(lib: Library) -> None:
    seed = await new_seed(lib)
    first = await seed.memory("same", channel="c1")
    shared = await seed.memory("same", channel="")
    locked = await seed.memory("same", channel="c2", locked=True)
    other_project = await seed.memory("same", channel="c3", project_id="p")
    report = issue(await _checked(lib, seed.tenant_id), "duplicate_content")
    assert (report["groups"], report["total_extra"], report["repairable"]) == (1, 2, 1)
    await _checked(lib, seed.tenant_id, fix=True, checks=["duplicate_content"])
    assert await seed.memory_row(first) is None
    for survivor in (shared, locked, other_project):
        assert await seed.memory_row(survivor) is not None


async def test_oversized_empty_and_profile_repairs(lib: Library) -> None:
    seed = await new_seed(lib)
    lib = dataclasses.replace(
        lib, settings=dataclasses.replace(lib.settings, max_content_length=10)
    )
    long_id = await seed.memory("0123456789abcdef")
    blank = await seed.memory("  \n\t ")
    blank_locked = await seed.memory("   ", locked=True, channel="x")
    agent = await seed.agent("a")
    async with lib.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO profiles (tenant_id, agent_id, content) VALUES ($1, $2, $3)",
            seed.tenant_id,
            agent,
            "p" * 2500,
        )
    body = await _checked(lib, seed.tenant_id, fix=True)
    assert issue(body, "oversized_content")["max_len"] == 16
    assert issue(body, "empty_content")["repairable"] == 1
    assert issue(body, "oversized_profile")["max_len"] == 2500
    assert (await seed.memory_row(long_id) or {})["content"] == "0123456789"
    assert await seed.memory_row(blank) is None
    assert await seed.memory_row(blank_locked) is not None
    profile = await seed.fetch("SELECT char_length(content) AS n FROM profiles")
    assert profile == [{"n": 2000}]
    assert body["status"] == "healthy"  # only the locked blank row is left: nothing to fix
    residual = await _checked(lib, seed.tenant_id, checks=["empty_content"])
    left = issue(residual, "empty_content")
    assert (left["severity"], left["repairable"], left["needs_human_review"]) == ("info", 0, True)


async def test_invalid_json_and_source_shapes(lib: Library) -> None:
    seed = await new_seed(lib)
    bad_meta = await seed.memory("m1", metadata=[1, 2])
    bad_source = await seed.memory("m2", source=5)
    legacy = await seed.memory("m3", source="user")
    unknown = await seed.memory("m4", source="claude-code")
    await seed.memory("m5", source={"type": "User", "id": "", "name": ""})
    body = await _checked(lib, seed.tenant_id)
    assert issue(body, "invalid_json") == {
        "type": "invalid_json",
        "severity": "warn",
        "check": "invalid_json",
        "bad_source": 1,
        "bad_metadata": 1,
        "repairable": 2,
    }
    sources = issue(body, "invalid_source_type")
    assert (sources["count"], sources["repairable"]) == (2, 1)
    anonymous = issue(body, "anonymous_source")
    assert (anonymous["count"], anonymous["unattributed"]) == (2, 1)
    fixed = await _checked(
        lib, seed.tenant_id, fix=True, checks=["invalid_json", "invalid_source_type"]
    )
    mapped = issue(fixed, "invalid_source_type")
    assert (mapped["mapped"], mapped["unmapped"], mapped["remaining"]) == (1, 1, 1)
    assert (await seed.memory_row(bad_meta) or {})["metadata"] == {}
    assert (await seed.memory_row(bad_source) or {})["source"] == {}
    assert (await seed.memory_row(legacy) or {})["source"] == {"type": "User", "id": "", "name": ""}
    assert (await seed.memory_row(unknown) or {})["source"] == "claude-code"
    after = issue(fixed, "invalid_source_type")
    assert fixed["severity_summary"]["warn"] == 0  # "claude-code" cannot be mapped: info now
    assert after["severity"] == "warn"


async def test_timestamps_are_parsed_replaced_and_normalised_to_utc(lib: Library) -> None:
    seed = await new_seed(lib)
    garbage = await seed.memory("t1", timestamp_text="yesterday-ish")
    parseable = await seed.memory("t2", timestamp_text="2026-03-01T10:00:00Z")
    aware = await seed.memory(
        "t3",
        timestamp_text="2026-03-01T12:00:00+02:00",
        timestamp_at=datetime(2026, 3, 1, 10, tzinfo=UTC),
    )
    locked = await seed.memory(
        "t4",
        locked=True,
        timestamp_text="2026-03-01T12:00:00+02:00",
        timestamp_at=datetime(2026, 3, 1, 10, tzinfo=UTC),
    )
    report = await _checked(lib, seed.tenant_id)
    assert issue(report, "invalid_timestamp")["reparsable"] == 1
    drift = issue(report, "timestamp_format_drift")
    assert (drift["aware"], drift["repairable"], drift["unfixable_locked"]) == (2, 1, 1)
    await _checked(lib, seed.tenant_id, fix=True)
    assert (await seed.memory_row(aware) or {})["timestamp_text"] == "2026-03-01T10:00:00+00:00"
    assert (await seed.memory_row(locked) or {})["timestamp_text"] == "2026-03-01T12:00:00+02:00"
    assert (await seed.memory_row(parseable) or {})["timestamp_text"] == "2026-03-01T10:00:00Z"
    replaced = await seed.fetch(
        "SELECT timestamp_text, timestamp_at = created_at AS same FROM memories WHERE id = $1",
        garbage,
    )
    assert replaced[0]["same"]
    assert replaced[0]["timestamp_text"].endswith("+00:00")


async def test_episode_times_are_filled_and_normalised(lib: Library) -> None:
    seed = await new_seed(lib)
    missing = await seed.episode("no start")
    aware = await seed.episode(
        "aware", start_time="2026-01-01T09:00:00+09:00", end_time="2026-01-01T10:00:00"
    )
    body = await _checked(lib, seed.tenant_id)
    assert issue(body, "missing_episode_start_time")["count"] == 1
    drift = issue(body, "episode_timestamp_format_drift")
    assert (drift["aware"], drift["naive"], drift["repairable"]) == (1, 1, 1)
    await _checked(lib, seed.tenant_id, fix=True)
    rows = await seed.fetch("SELECT id, start_time, end_time FROM episodes ORDER BY id")
    assert rows[0]["id"] == missing
    assert rows[0]["start_time"].endswith("+00:00")
    assert rows[1] == {
        "id": aware,
        "start_time": "2026-01-01T00:00:00+00:00",
        "end_time": "2026-01-01T10:00:00",
    }


async def test_axis_spellings_that_differ_only_by_case_or_punctuation(lib: Library) -> None:
    seed = await new_seed(lib)
    for project in ("Data-Ops", "dataops", "data_ops", "other"):
        await seed.memory(f"in {project}", project_id=project)
    await seed.memory("ch", channel="General")
    await seed.memory("ch2", channel="general")
    body = issue(await _checked(lib, seed.tenant_id), "axis_hygiene")
    assert body["project_id_clusters"] == [
        [
            {"project_id": "Data-Ops", "count": 1},
            {"project_id": "data_ops", "count": 1},
            {"project_id": "dataops", "count": 1},
        ]
    ]
    assert len(body["channel_clusters"]) == 1
    stats = (await _checked(lib, seed.tenant_id))["stats"]
    assert stats["axes"]["channel"]["(global)"] == 4
    assert stats["axes"]["project_id"]["(global)"] == 2


async def test_embedding_checks_queue_instead_of_embedding(lib: Library) -> None:
    seed = await new_seed(lib)
    lib = dataclasses.replace(lib, embedder=WidthOnly(384))
    wrong = await seed.memory("wide", embedding=unit(1536))
    wrong_locked = await seed.memory("wide locked", embedding=unit(1536), locked=True)
    await seed.memory("right", embedding=unit(384))
    await seed.episode("ep without vector")
    report = await _checked(lib, seed.tenant_id)
    dimension = issue(report, "embedding_dimension")
    assert dimension["severity"] == "critical"
    assert (dimension["count"], dimension["repairable"], dimension["expected_dim"]) == (2, 1, 384)
    assert issue(report, "null_episode_embedding")["severity"] == "critical"  # 1 of 1 missing
    await _checked(lib, seed.tenant_id, fix=True)
    assert (await seed.memory_row(wrong) or {})["embedding"] is None
    assert (await seed.memory_row(wrong_locked) or {})["embedding"] is not None
    jobs = await seed.fetch("SELECT item_kind, count(*) AS n FROM embedding_jobs GROUP BY 1")
    assert sorted((r["item_kind"], r["n"]) for r in jobs) == [("ep", 1), ("mem", 1)]
    again = issue(await _checked(lib, seed.tenant_id), "null_embedding")
    assert (again["queued"], again["repairable"], again["needs_human_review"]) == (1, 0, True)


async def test_null_embedding_is_info_without_a_provider(lib: Library) -> None:
    seed = await new_seed(lib)
    await seed.memory("no vector")
    found = issue(await _checked(lib, seed.tenant_id), "null_embedding")
    assert found["severity"] == "info"
    assert found["repairable"] == 0
    assert "CPERSONA_EMBEDDING_MODE=none" in found["hint"]


async def test_stale_jobs_are_rearmed_or_dropped(lib: Library) -> None:
    seed = await new_seed(lib)
    lib = dataclasses.replace(lib, embedder=WidthOnly())
    waiting = await seed.memory("waiting")
    dead = await seed.memory("dead")
    async with lib.db.tenant_tx(seed.tenant_id) as conn:
        await conn.execute(
            "INSERT INTO embedding_jobs (tenant_id, item_kind, item_id, attempts, created_at) "
            "VALUES ($1, 'mem', $2, 0, now() - interval '2 hours'), ($1, 'mem', $3, 3, now()), "
            "($1, 'mem', 999999, 0, now() - interval '2 hours')",
            seed.tenant_id,
            waiting,
            dead,
        )
    stale = issue(await _checked(lib, seed.tenant_id), "stale_pending_tasks")
    assert (stale["count"], stale["dead"], stale["orphaned"]) == (3, 1, 1)
    body = await _checked(lib, seed.tenant_id, fix=True, checks=["stale_pending_tasks"])
    done = issue(body, "stale_pending_tasks")
    assert (done["deleted"], done["requeued"]) == (1, 2)
    assert body["status"] == "healthy"
    jobs = await seed.fetch("SELECT item_id, attempts FROM embedding_jobs ORDER BY item_id")
    assert jobs == [{"item_id": waiting, "attempts": 0}, {"item_id": dead, "attempts": 0}]


async def test_missing_profile_and_agent_scope(lib: Library) -> None:
    seed = await new_seed(lib)
    await seed.memory("   ", agent="a")
    await seed.memory("fine", agent="b")
    everyone = await _checked(lib, seed.tenant_id)
    assert issue(everyone, "missing_profile")["agents"] == ["a", "b"]
    only_b = await _checked(lib, seed.tenant_id, "b", fix=True)
    assert "empty_content" not in checks_of(only_b)
    assert only_b["stats"]["agent_memories"] == 1
    assert only_b["total_memories"] == 1
    assert issue(only_b, "missing_profile")["agents"] == ["b"]
    nobody = await _checked(lib, seed.tenant_id, "nobody")
    assert nobody["total_memories"] == 0
    assert "missing_profile" not in checks_of(nobody)
    still = await _checked(lib, seed.tenant_id, checks=["empty_content"])
    assert issue(still, "empty_content")["count"] == 1


async def test_operating_context_problems_are_reported(lib: Library) -> None:
    seed = await new_seed(lib)
    document = {"version": 2, "instructions": {"summary": "x" * 3500}}
    async with lib.db.admin_tx() as conn:
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(seed.tenant_id))
        await conn.execute(
            "INSERT INTO operating_contexts (tenant_id, revision, document) VALUES ($1, 'r9', $2)",
            seed.tenant_id,
            document,
        )
    body = await _checked(lib, seed.tenant_id)
    parse = issue(body, "operating_context_parse")
    assert parse["severity"] == "warn"
    assert "version" in parse["detail"]
    size = issue(body, "operating_context_size")
    assert (size["severity"], size["summary_len"], size["budget"]) == ("info", 3500, 3000)


async def test_a_width_without_an_hnsw_index_is_noted(lib: Library) -> None:
    seed = await new_seed(lib)
    body = await _checked(dataclasses.replace(lib, embedder=WidthOnly(768)), seed.tenant_id)
    found = issue(body, "vector_fallback_config")
    assert (found["dimension"], found["indexed_dimensions"]) == (768, [384, 1536])


@pytest.mark.parametrize(
    ("statement", "check", "severity"),
    [
        ("UPDATE alembic_version SET version_num = '0002'", "migrations_at_head", "critical"),
        ("DROP INDEX memories_dedup_msg_id", "schema_objects", "critical"),
        ("DROP POLICY tenant_isolation ON profiles", "schema_objects", "critical"),
        ("ALTER TABLE episodes DISABLE ROW LEVEL SECURITY", "rls_enabled", "critical"),
        ("ALTER TABLE episodes NO FORCE ROW LEVEL SECURITY", "rls_enabled", "warn"),
        (
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'memories_trgm'::regclass",
            "index_validity",
            "critical",
        ),
        ("DROP INDEX episodes_tsv", "search_index_validity", "warn"),
    ],
)
async def test_deployment_drift_is_reported_to_every_tenant(
    lib: Library, statement: str, check: str, severity: str
) -> None:
    seed = await new_seed(lib)
    assert check not in checks_of(await _checked(lib, seed.tenant_id))
    async with lib.db.admin_tx() as conn:
        await conn.execute(statement)
    other = await new_seed(lib, "other")
    for tenant in (seed.tenant_id, other.tenant_id):
        body = await _checked(lib, tenant, fix=True)
        found = issue(body, check)
        assert found["severity"] == severity
        assert "hint" in found
        assert "repairable" not in found
        assert body["status"] == ("unhealthy" if severity == "critical" else "degraded")
    assert json.dumps(found).count(str(seed.tenant_id)) == 0


async def test_a_crashing_check_is_reported_and_the_others_still_run(
    lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def boom(conn: Any, scope: Any) -> dict[str, Any] | None:
        await conn.execute("SELECT 1/0")
        return None

    broken = Check("empty_content", "warn", boom)
    monkeypatch.setattr(
        registry, "BY_NAME", MappingProxyType({**registry.BY_NAME, "empty_content": broken})
    )
    seed = await new_seed(lib)
    await seed.memory("x" * 20000)
    body = await _checked(
        lib, seed.tenant_id, fix=True, checks=["empty_content", "oversized_content"]
    )
    crashed = issue(body, "empty_content")
    assert crashed["type"] == "check_crashed"
    assert "DivisionByZero" in crashed["detail"]
    assert issue(body, "oversized_content")["fixed"] == 1


def test_exit_codes_gate_on_critical_and_on_warn_when_strict() -> None:
    assert health.exit_code(SeverityCounts(critical=1)) == 2
    assert health.exit_code(SeverityCounts(warn=3)) == 0
    assert health.exit_code(SeverityCounts(warn=3), strict=True) == 1
    assert health.exit_code(SeverityCounts(info=9), strict=True) == 0
    assert health.status(SeverityCounts(info=2)) == "healthy"
