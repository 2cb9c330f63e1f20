"""The operator family's renderers answer the exact wire objects the tools answered before
the library returned records: same keys, same key order, same omissions."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

from service.db.portability import ItemCounts
from service.mcp.render import (
    calibration as render_calibration,
    health as render_health,
    operating_context as render_context,
    portability as render_portability,
    queue as render_queue,
)
from service.memory.calibration import precision, records, stats, threshold
from service.memory.health import base, channel_axis, deep, runner
from service.memory.operating_context import describe, model
from service.memory.portability import outcomes
from service.memory.queue import backlog
from service.models import JsonObject


def _bytes(body: JsonObject) -> str:
    """The JSON text of a body: key order included, as the wire carries it."""
    return json.dumps(body)


def _context() -> model.OperatingContext:
    return model.OperatingContext(
        revision="r7",
        summary="be kind",
        project_ids=("atlas", "borealis"),
        enforce="warn",
        defaults=MappingProxyType({"alpha": "atlas"}),
        doctrine=(model.Doctrine("b-section", "B"), model.Doctrine("a-section", "A")),
    )


def test_queue_status_renders_the_disabled_and_the_draining_shapes() -> None:
    off = render_queue.queue_status(backlog.QueueStatus(active=None))
    assert _bytes(off) == _bytes({"enabled": False, "pending": 0})
    queue = backlog.ActiveQueue(
        pending=2,
        retrying=1,
        oldest_pending_seconds=12.345,
        max_retries=3,
        retry_delay=30,
        passages_pending=1,
    )
    on = render_queue.queue_status(backlog.QueueStatus(active=queue))
    expected: JsonObject = {
        "enabled": True,
        "pending": 2,
        "max_retries": 3,
        "retry_delay": 30,
        "retrying": 1,
        "oldest_pending_seconds": 12.3,
        "passages_pending": 1,
    }
    assert _bytes(on) == _bytes(expected)


def test_operating_context_renders_the_preview_and_a_section() -> None:
    ctx = _context()
    preview: JsonObject = {
        "ok": True,
        "context_revision": "r7",
        "instructions_summary": "be kind",
        "registry": {"project_ids": ["atlas", "borealis"], "enforce": "warn"},
        "defaults": {"alpha": "atlas"},
        "doctrine_sections": ["a-section", "b-section"],
    }
    assert _bytes(render_context.description(describe.describe(ctx))) == _bytes(preview)
    section: JsonObject = {
        "ok": True,
        "context_revision": "r7",
        "section": "b-section",
        "body": "B",
    }
    found = describe.describe(ctx, "b-section")
    assert _bytes(render_context.description(found)) == _bytes(section)


GATE = stats.FusedGate(
    threshold=0.41,
    signal="rsf",
    beta=2.0,
    youden_j=0.5,
    queries_run=3,
    n_null=10,
    n_pos=5,
    null_admit_rate=0.0,
    pos_admit_rate=1.0,
    null_mean=0.1,
    pos_mean=0.7,
    threshold_draws=(0.15, 0.41),
)
GATE_BODY: JsonObject = {
    "threshold": 0.41,
    "signal": "rsf",
    "beta": 2.0,
    "youden_j": 0.5,
    "queries_run": 3,
    "n_null": 10,
    "n_pos": 5,
    "null_admit_rate": 0.0,
    "pos_admit_rate": 1.0,
    "null_mean": 0.1,
    "pos_mean": 0.7,
    "threshold_draws": [0.15, 0.41],
}


def _calibration(gate: stats.FusedGate | None, *, separation: bool) -> records.Calibration:
    spread = stats.ThresholdStats(
        threshold=0.3,
        mean=0.1,
        std=0.05,
        median=0.09,
        p95=0.2,
        null_admit_rate=0.01,
        youden_j=0.6 if separation else None,
        pos_mean=0.5 if separation else None,
        pos_admit_rate=0.9 if separation else None,
    )
    return records.Calibration(
        persisted=True,
        agent_id="alice",
        sampled_embeddings=18,
        num_pairs=153,
        method="separation" if separation else "zscore",
        z_factor=1.5,
        percentile=0.95,
        embedding_dim=8,
        embedding_model="m",
        stats=spread,
        old_threshold=0.25,
        proxy_source="temporal" if separation else None,
        fused_gate=gate,
    )


def test_calibrate_threshold_renders_every_key_in_order_and_omits_the_unmeasured() -> None:
    head: JsonObject = {
        "ok": True,
        "sidecar_persisted": True,
        "scope": "per_agent",
        "agent_id": "alice",
        "sampled_embeddings": 18,
        "num_pairs": 153,
    }
    spread: JsonObject = {
        "embedding_dim": 8,
        "embedding_model": "m",
        "distribution": {"mean": 0.1, "std": 0.05, "median": 0.09, "p95": 0.2},
        "null_admit_rate": 0.01,
        "old_threshold": 0.25,
        "new_threshold": 0.3,
    }
    full: JsonObject = {
        **head,
        "method": "separation",
        "z_factor": 1.5,
        "percentile": 0.95,
        **spread,
        "proxy_source": "temporal",
        "youden_j": 0.6,
        "pos_admit_rate": 0.9,
        "pos_mean": 0.5,
        "fused_gate": GATE_BODY,
    }
    rendered = render_calibration.calibration(_calibration(GATE, separation=True))
    assert _bytes(rendered) == _bytes(full)
    bare: JsonObject = {**head, "method": "zscore", "z_factor": 1.5, "percentile": 0.95, **spread}
    rendered = render_calibration.calibration(_calibration(None, separation=False))
    assert _bytes(rendered) == _bytes(bare)


def test_a_single_gate_draw_has_no_threshold_draws() -> None:
    single = dataclasses.replace(GATE, threshold_draws=None)
    body = dict(GATE_BODY)
    del body["threshold_draws"]
    assert _bytes(threshold.gate_document(single)) == _bytes(body)


def test_paused_calibration_keeps_the_success_shape() -> None:
    paused = records.PausedCalibration(
        agent_id="",
        method=None,
        z_factor=None,
        percentile=None,
        embedding_model=None,
        old_threshold=0.25,
    )
    expected: JsonObject = {
        "ok": True,
        "sidecar_persisted": False,
        "scope": "global",
        "agent_id": "",
        "sampled_embeddings": 0,
        "num_pairs": 0,
        "method": None,
        "z_factor": None,
        "percentile": None,
        "embedding_dim": None,
        "embedding_model": None,
        "distribution": None,
        "null_admit_rate": None,
        "old_threshold": 0.25,
        "new_threshold": None,
    }
    assert _bytes(render_calibration.paused_calibration(paused)) == _bytes(expected)


def test_precision_answers_render_in_order() -> None:
    change = precision.PrecisionChange(2.0, 2.0, "strict")
    applied = records.PrecisionSet(
        agent_id="alice", change=change, calibration=_calibration(GATE, separation=True)
    )
    expected: JsonObject = {
        "ok": True,
        "agent_id": "alice",
        "precision": "strict",
        "beta": 2.0,
        "cleared": False,
        "fused_gate": GATE_BODY,
        "calibrate": {"ok": True, "scope": "per_agent", "new_threshold": 0.3},
    }
    assert _bytes(render_calibration.precision_set(applied)) == _bytes(expected)
    cleared = precision.PrecisionChange(None, 1.0, "default")
    paused = records.PrecisionSet(agent_id="alice", change=cleared, calibration=None)
    expected = {
        "ok": True,
        "agent_id": "alice",
        "precision": "default",
        "beta": 1.0,
        "cleared": True,
        "fused_gate": None,
        "calibrate": None,
    }
    assert _bytes(render_calibration.precision_set(paused)) == _bytes(expected)
    found = records.Precision(
        agent_id="alice",
        precision="custom",
        beta=0.7,
        overridden=True,
        global_precision="balanced",
        global_beta=1.0,
    )
    expected = {
        "ok": True,
        "agent_id": "alice",
        "precision": "custom",
        "beta": 0.7,
        "overridden": True,
        "global_precision": "balanced",
        "global_beta": 1.0,
    }
    assert _bytes(render_calibration.precision(found)) == _bytes(expected)


def test_export_renders_counts_and_the_download_link() -> None:
    done = outcomes.Exported(
        path="a.jsonl",
        counts=ItemCounts(memories=3, episodes=2, profiles=1),
        download_url="/v1/files/t",
        expires_at="2026-01-01T00:00:00+00:00",
    )
    expected: JsonObject = {
        "ok": True,
        "path": "a.jsonl",
        "memories": 3,
        "episodes": 2,
        "profiles": 1,
        "download_url": "/v1/files/t",
        "expires_at": "2026-01-01T00:00:00+00:00",
    }
    assert _bytes(render_portability.exported(done)) == _bytes(expected)


def test_import_renders_graph_records_and_errors_only_when_present() -> None:
    counts: JsonObject = {
        "ok": True,
        "dry_run": True,
        "imported_memories": 4,
        "skipped_memories": 1,
        "imported_episodes": 2,
        "skipped_episodes": 0,
        "profile_updated": True,
    }
    done = outcomes.Imported(
        dry_run=True,
        imported_memories=4,
        skipped_memories=1,
        imported_episodes=2,
        profile_updated=True,
    )
    assert _bytes(render_portability.imported(done)) == _bytes(counts)
    noted = dataclasses.replace(
        done,
        graph=outcomes.GraphRecords(entity=1, mention=0, relation=2),
        errors=("line 3: bad", "... and 2 more"),
    )
    expected: JsonObject = {
        **counts,
        "skipped_graph_records": {"entity": 1, "mention": 0, "relation": 2},
        "errors": ["line 3: bad", "... and 2 more"],
    }
    assert _bytes(render_portability.imported(noted)) == _bytes(expected)


def test_merge_renders_a_copy_and_a_move() -> None:
    copy = outcomes.Merged(
        dry_run=False,
        source_agent_id="a",
        target_agent_id="b",
        strategy="skip",
        mode="copy",
        merged_memories=3,
        skipped_memories=1,
        merged_episodes=2,
        skipped_episodes=0,
        profile_copied=True,
        skipped_profile=False,
    )
    counts: JsonObject = {
        "ok": True,
        "dry_run": False,
        "source_agent_id": "a",
        "target_agent_id": "b",
        "strategy": "skip",
        "mode": "copy",
        "merged_memories": 3,
        "skipped_memories": 1,
        "merged_episodes": 2,
        "skipped_episodes": 0,
        "profile_copied": True,
        "skipped_profile": False,
    }
    assert _bytes(render_portability.merged(copy)) == _bytes(counts)
    move = dataclasses.replace(
        copy,
        mode="move",
        source_deleted=outcomes.SourceDeleted(
            agent_id="a",
            deleted_memories=3,
            deleted_profiles=1,
            deleted_episodes=2,
            deleted_pending_tasks=4,
        ),
        left_at_source=ItemCounts(memories=1, episodes=0, profiles=0),
    )
    expected: JsonObject = {
        **counts,
        "mode": "move",
        "source_deleted": {
            "ok": True,
            "agent_id": "a",
            "deleted_memories": 3,
            "deleted_profiles": 1,
            "deleted_episodes": 2,
            "deleted_pending_tasks": 4,
        },
        "left_at_source": {"memories": 1, "episodes": 0, "profiles": 0},
    }
    assert _bytes(render_portability.merged(move)) == _bytes(expected)


def _check(name: str, *, fixable: bool = True) -> base.Check:
    async def run(conn: object, scope: object) -> None:
        return None

    async def fix(conn: object, scope: object) -> base.Repairs:
        return base.Repairs(fixed=0)

    return base.Check(name, "warn", run, fix if fixable else None)


def test_an_issue_renders_type_severity_check_then_findings_then_repairs() -> None:
    found = base.finish({"type": "t", "count": 3, "repairable": 2}, _check("c"))
    fixed = dataclasses.replace(found, repairs=base.Repairs(fixed=2, deleted=1, requeued=1))
    expected: JsonObject = {
        "type": "t",
        "severity": "warn",
        "check": "c",
        "count": 3,
        "repairable": 2,
        "fixed": 2,
        "deleted": 1,
        "requeued": 1,
    }
    assert _bytes(render_health.issue(fixed)) == _bytes(expected)


def test_an_unrepairable_issue_drops_to_info_and_keeps_its_own_hint_in_place() -> None:
    own = base.finish({"repairable": 0, "hint": "mine", "count": 1}, _check("c"))
    expected: JsonObject = {
        "type": "c",
        "severity": "info",
        "check": "c",
        "repairable": 0,
        "hint": "mine",
        "count": 1,
        "needs_human_review": True,
    }
    assert _bytes(render_health.issue(own)) == _bytes(expected)
    bare = base.finish({"severity": "critical", "repairable": 0}, _check("c"))
    expected = {
        "type": "c",
        "severity": "critical",
        "check": "c",
        "repairable": 0,
        "needs_human_review": True,
        "hint": base.UNREPAIRABLE_HINT,
    }
    assert _bytes(render_health.issue(bare)) == _bytes(expected)
    unfixable = base.finish({"repairable": 0}, _check("c", fixable=False))
    assert _bytes(render_health.issue(unfixable)) == _bytes(
        {"type": "c", "severity": "warn", "check": "c", "repairable": 0}
    )


def test_a_repair_count_the_findings_name_keeps_its_place() -> None:
    found = base.finish({"remaining": 5, "repairable": 1}, _check("c"))
    fixed = dataclasses.replace(found, repairs=base.Repairs(fixed=1, mapped=1, remaining=4))
    expected: JsonObject = {
        "type": "c",
        "severity": "warn",
        "check": "c",
        "remaining": 4,
        "repairable": 1,
        "fixed": 1,
        "mapped": 1,
    }
    assert _bytes(render_health.issue(fixed)) == _bytes(expected)


def test_check_health_renders_the_envelope_and_the_per_agent_stats() -> None:
    stats = runner.HealthStats(
        db_size_bytes=10,
        memories=2,
        episodes=1,
        profiles=0,
        pending_tasks=0,
        axes=runner.Axes(project_id={"(global)": 2}, channel={}),
        per_agent=True,
    )
    report = runner.HealthReport(
        issues=(),
        severity_summary=base.SeverityCounts(),
        status="healthy",
        fixed=False,
        checks_run=("memory_annotation",),
        stats=stats,
        repairs_skip_reason="paused",
    )
    expected: JsonObject = {
        "total_memories": 2,
        "issues": [],
        "severity_summary": {"critical": 0, "warn": 0, "info": 0},
        "status": "healthy",
        "fixed": False,
        "checks_run": ["memory_annotation"],
        "stats": {
            "db_size_bytes": 10,
            "memories": 2,
            "episodes": 1,
            "profiles": 0,
            "pending_tasks": 0,
            "axes": {"project_id": {"(global)": 2}, "channel": {}},
            "agent_memories": 2,
            "agent_episodes": 1,
        },
        "repairs_skipped": True,
        "repairs_skip_reason": "paused",
    }
    assert _bytes(render_health.health_report(report)) == _bytes(expected)


def test_deep_check_renders_findings_and_error_slots_in_run_order() -> None:
    report = deep.DeepReport(
        agent_id="a",
        checks_run=("short_content", "stale_profile"),
        results=(
            deep.DeepSlot(
                name="short_content", findings=deep.ShortContent(count=0, fixed=None, samples=())
            ),
            deep.DeepSlot(name="stale_profile", error="ValueError: x"),
        ),
        fixed=False,
    )
    expected: JsonObject = {
        "agent_id": "a",
        "checks_run": ["short_content", "stale_profile"],
        "results": {"short_content": {"count": 0}, "stale_profile": {"error": "ValueError: x"}},
        "fixed": False,
    }
    assert _bytes(render_health.deep_report(report)) == _bytes(expected)


def test_migrate_channel_axis_renders_skipped_locked_only_when_some_were() -> None:
    done = channel_axis.ChannelMigration(
        agent_id="",
        dry_run=True,
        recoverable_total=1,
        recoverable_by_channel=({"channel": "1", "count": 1},),
        unrecoverable_total=0,
        invalid_metadata_total=0,
        invalid_metadata_ids=(),
        globalize_unrecoverable=False,
        migrated=0,
        globalized=0,
        samples=(),
        skipped_locked=0,
        repairs_skip_reason=channel_axis.PAUSE_REASON,
    )
    expected: JsonObject = {
        "agent_id": "",
        "dry_run": True,
        "recoverable_total": 1,
        "recoverable_by_channel": [{"channel": "1", "count": 1}],
        "unrecoverable_total": 0,
        "invalid_metadata_total": 0,
        "invalid_metadata_ids": [],
        "globalize_unrecoverable": False,
        "migrated": 0,
        "globalized": 0,
        "samples": [],
        "repairs_skipped": True,
        "repairs_skip_reason": channel_axis.PAUSE_REASON,
    }
    assert _bytes(render_health.channel_migration(done)) == _bytes(expected)
    locked = dataclasses.replace(done, skipped_locked=2, repairs_skip_reason=None)
    body = render_health.channel_migration(locked)
    assert list(body)[-1] == "skipped_locked"
    assert body["skipped_locked"] == 2


def test_deep_findings_render_each_checks_shape() -> None:
    names = deep.AnonymousSources(
        recoverable=2,
        unrecoverable=1,
        fixed=1,
        unfixable_locked=1,
        samples=(deep.RecoveredName(id=1, recovered_name="bob"),),
        unrecoverable_samples=(deep.ContentPreview(id=3, content_preview="no name"),),
    )
    expected: JsonObject = {
        "recoverable": 2,
        "unrecoverable": 1,
        "fixed": 1,
        "unfixable_locked": 1,
        "samples": [{"id": 1, "recovered_name": "bob"}],
        "unrecoverable_samples": [{"id": 3, "content_preview": "no name"}],
    }
    assert _bytes(render_health.deep_findings(names)) == _bytes(expected)
    stale = deep.CalibrationAge(
        status="stale", age_days=100, threshold_days=90, scope="agent", hint="run it"
    )
    expected = {
        "status": "stale",
        "age_days": 100,
        "threshold_days": 90,
        "scope": "agent",
        "hint": "run it",
    }
    assert _bytes(render_health.deep_findings(stale)) == _bytes(expected)
    orphans = deep.OrphanedEpisodes(
        count=1,
        unparseable=2,
        samples=(deep.EpisodeSample(id=5, summary="s", start="a", end="b"),),
    )
    expected = {
        "count": 1,
        "unparseable": 2,
        "samples": [{"id": 5, "summary": "s", "start": "a", "end": "b"}],
    }
    assert _bytes(render_health.deep_findings(orphans)) == _bytes(expected)
    pairs = deep.NearDuplicates(
        pairs=1, rows_scanned=9, threshold=0.97, skipped_other_width=0, samples=({"a": 1},)
    )
    expected = {
        "pairs": 1,
        "rows_scanned": 9,
        "threshold": 0.97,
        "samples": [{"a": 1}],
        "hint": "review with merge_memories / delete_memory (agent judgment)",
    }
    assert _bytes(render_health.deep_findings(pairs)) == _bytes(expected)
