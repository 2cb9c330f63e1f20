"""The maintenance answers: check_health, deep_check, migrate_channel_axis
(docs/health.md, "check_health"; docs/health.md, "deep_check";
docs/health.md, "migrate_channel_axis"). The ``checkup`` command prints :func:`health_report`."""

from __future__ import annotations

from service.memory.health.base import Issue, Repairs, SeverityCounts
from service.memory.health.channel_axis import ChannelMigration
from service.memory.health.deep import (
    AnonymousSources,
    CalibrationAge,
    DeepFindings,
    DeepReport,
    DeepSlot,
    NearDuplicates,
    OrphanedEpisodes,
    ShortContent,
    StaleProfile,
)
from service.memory.health.runner import HealthReport, HealthStats
from service.models import JsonObject


def repairs(done: Repairs) -> JsonObject:
    """``fixed`` and the check's own counts, in one fixed order, without the absent ones."""
    counts = (
        ("fixed", done.fixed),
        ("rewritten", done.rewritten),
        ("deleted", done.deleted),
        ("enqueued", done.enqueued),
        ("requeued", done.requeued),
        ("reparsed", done.reparsed),
        ("replaced", done.replaced),
        ("normalized", done.normalized),
        ("mapped", done.mapped),
        ("unmapped", done.unmapped),
        ("remaining", done.remaining),
    )
    return {key: value for key, value in counts if value is not None}


def issue(found: Issue) -> JsonObject:
    """``type, severity, check``, the findings with the repair counts merged in (a count
    the findings already name keeps its place), then the unrepairable verdict."""
    body: JsonObject = {"type": found.type, "severity": found.severity, "check": found.check}
    body.update(found.findings)
    if found.repairs is not None:
        body.update(repairs(found.repairs))
    if found.needs_human_review:
        body["needs_human_review"] = True
    if found.hint is not None:
        body["hint"] = found.hint
    return body


def _counts(counts: SeverityCounts) -> JsonObject:
    return {"critical": counts.critical, "warn": counts.warn, "info": counts.info}


def _stats(stats: HealthStats) -> JsonObject:
    body: JsonObject = {
        "db_size_bytes": stats.db_size_bytes,
        "memories": stats.memories,
        "episodes": stats.episodes,
        "profiles": stats.profiles,
        "pending_tasks": stats.pending_tasks,
        "axes": {"project_id": dict(stats.axes.project_id), "channel": dict(stats.axes.channel)},
    }
    if stats.per_agent:
        body["agent_memories"] = stats.memories
        body["agent_episodes"] = stats.episodes
    return body


def _skipped(body: JsonObject, reason: str | None) -> JsonObject:
    if reason is not None:
        body["repairs_skipped"] = True
        body["repairs_skip_reason"] = reason
    return body


def health_report(report: HealthReport) -> JsonObject:
    """check_health's answer: ``{total_memories, issues, severity_summary, status, fixed,
    checks_run, stats}`` and ``repairs_skipped`` with its reason under a pause."""
    body: JsonObject = {
        "total_memories": report.stats.memories,
        "issues": [issue(found) for found in report.issues],
        "severity_summary": _counts(report.severity_summary),
        "status": report.status,
        "fixed": report.fixed,
        "checks_run": list(report.checks_run),
        "stats": _stats(report.stats),
    }
    return _skipped(body, report.repairs_skip_reason)


def _anonymous_source(found: AnonymousSources) -> JsonObject:
    body: JsonObject = {"recoverable": found.recoverable, "unrecoverable": found.unrecoverable}
    if found.fixed is not None:
        body["fixed"] = found.fixed
    if found.unfixable_locked:
        body["unfixable_locked"] = found.unfixable_locked
    if found.samples:
        body["samples"] = [{"id": s.id, "recovered_name": s.recovered_name} for s in found.samples]
    if found.unrecoverable_samples:
        body["unrecoverable_samples"] = [
            {"id": s.id, "content_preview": s.content_preview} for s in found.unrecoverable_samples
        ]
    return body


def _short_content(found: ShortContent) -> JsonObject:
    body: JsonObject = {"count": found.count}
    if found.fixed is not None:
        body["fixed"] = found.fixed
    if found.samples:
        body["samples"] = [{"id": s.id, "content": s.content} for s in found.samples]
    return body


def _stale_profile(found: StaleProfile) -> JsonObject:
    body: JsonObject = {"count": found.count, "threshold_days": found.threshold_days}
    if found.last_updated is not None:
        body["last_updated"] = found.last_updated
    return body


def _orphaned_episodes(found: OrphanedEpisodes) -> JsonObject:
    body: JsonObject = {"count": found.count}
    if found.unparseable:
        body["unparseable"] = found.unparseable
    if found.samples:
        body["samples"] = [
            {"id": s.id, "summary": s.summary, "start": s.start, "end": s.end}
            for s in found.samples
        ]
    return body


def _calibration_age(found: CalibrationAge) -> JsonObject:
    """``status`` first, then whichever of the other fields that status reports."""
    fields = (
        ("reason", found.reason),
        ("stored_scoring_version", found.stored_scoring_version),
        ("runtime_scoring_version", found.runtime_scoring_version),
        ("age_days", found.age_days),
        ("threshold_days", found.threshold_days),
        ("scope", found.scope),
        ("embedded_rows", found.embedded_rows),
        ("hint", found.hint),
    )
    body: JsonObject = {"status": found.status}
    body.update((key, value) for key, value in fields if value is not None)
    return body


def _near_duplicate(found: NearDuplicates) -> JsonObject:
    body: JsonObject = {
        "pairs": found.pairs,
        "rows_scanned": found.rows_scanned,
        "threshold": found.threshold,
    }
    if found.skipped_other_width:
        body["skipped_other_width"] = found.skipped_other_width
    if found.samples:
        body["samples"] = list(found.samples)
        body["hint"] = "review with merge_memories / delete_memory (agent judgment)"
    return body


def deep_findings(found: DeepFindings) -> JsonObject:
    """One deep check's result object, in the shape of its check."""
    if isinstance(found, AnonymousSources):
        return _anonymous_source(found)
    if isinstance(found, ShortContent):
        return _short_content(found)
    if isinstance(found, StaleProfile):
        return _stale_profile(found)
    if isinstance(found, OrphanedEpisodes):
        return _orphaned_episodes(found)
    if isinstance(found, CalibrationAge):
        return _calibration_age(found)
    return _near_duplicate(found)


def _slot(slot: DeepSlot) -> JsonObject:
    if slot.findings is None:
        return {"error": slot.error}
    return deep_findings(slot.findings)


def deep_report(report: DeepReport) -> JsonObject:
    """deep_check's answer: ``{agent_id, checks_run, results: {name: findings or
    {error}}, fixed}`` and ``repairs_skipped`` with its reason under a pause."""
    body: JsonObject = {
        "agent_id": report.agent_id,
        "checks_run": list(report.checks_run),
        "results": {slot.name: _slot(slot) for slot in report.results},
        "fixed": report.fixed,
    }
    return _skipped(body, report.repairs_skip_reason)


def channel_migration(done: ChannelMigration) -> JsonObject:
    """migrate_channel_axis's answer; ``skipped_locked`` only when some row was locked."""
    body: JsonObject = {
        "agent_id": done.agent_id,
        "dry_run": done.dry_run,
        "recoverable_total": done.recoverable_total,
        "recoverable_by_channel": list(done.recoverable_by_channel),
        "unrecoverable_total": done.unrecoverable_total,
        "invalid_metadata_total": done.invalid_metadata_total,
        "invalid_metadata_ids": list(done.invalid_metadata_ids),
        "globalize_unrecoverable": done.globalize_unrecoverable,
        "migrated": done.migrated,
        "globalized": done.globalized,
        "samples": list(done.samples),
    }
    if done.skipped_locked:
        body["skipped_locked"] = done.skipped_locked
    return _skipped(body, done.repairs_skip_reason)
