"""check_health (docs/health.md, "check_health"), scoped to one tenant and optionally one agent.

Tenant checks run in one tenant transaction (row-level security applies); with
``fix`` that is the one transaction every repair writes in, each check inside its
own savepoint so a crashing check rolls back alone. Deployment checks read the
catalogs in a separate admin transaction and never write. After a fix run, a
read-only *residual* run measures what is still wrong: ``severity_summary`` and
``status`` come from it, while ``issues`` stay those of the fix run (with what each
repair wrote), so a repaired tenant is not reported unhealthy for what was fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from service.db.health import content as content_queries, embeddings
from service.db.pool import Connection
from service.errors import Refused
from service.logs import get_logger
from service.memory.health import registry
from service.memory.health.base import (
    Check,
    Findings,
    Issue,
    Repairs,
    Scope,
    SeverityCounts,
    finish,
    status,
    summary,
)
from service.memory.library import Library
from service.models import TenantId

log = get_logger(__name__)

AXIS_TOP = 20
PAUSE_REASON = "no-persist mode active — fix downgraded to fix=False"


def unknown_checks(unknown: list[str]) -> Refused:
    """The refusal of a run naming checks that do not exist; ``checks_run`` is empty (nothing
    ran), the shape CPersona 2.6 answers."""
    valid = list(registry.CHECK_NAMES)
    message = f"unknown check name(s): {', '.join(unknown)}. Valid names: {', '.join(valid)}"
    return Refused(message, unknown_checks=unknown, valid_checks=valid, checks_run=[])


async def _dimension(conn: Connection, lib: Library) -> int | None:
    """The configured provider's width: its own when it knows it, else the one the
    deployment recorded (a provider that learns its width from a response may not
    have seen one yet); None without a provider."""
    if lib.embedder is None:
        return None
    if lib.embedder.dimension > 0:
        return lib.embedder.dimension
    return await embeddings.health_recorded_dimension(conn)


async def _one(conn: Connection, scope: Scope, check: Check, fix: bool) -> Issue | None:
    """Run one check (and its repair) in a savepoint; a crash becomes a warn issue."""
    repairs: Repairs | None = None
    findings: Findings | None
    try:
        async with conn.transaction():
            findings = await check.run(conn, scope)
            wanted = findings is not None and findings.get("repairable") != 0
            if wanted and fix and check.fix is not None:
                repairs = await check.fix(conn, scope)
    except Exception as exc:  # isolation boundary: one broken check must not hide the rest
        log.exception("health_check_crashed", check=check.name)
        repairs = None
        findings = {
            "type": "check_crashed",
            "severity": "warn",
            "check_name": check.name,
            "detail": f"{type(exc).__name__}: {exc}",
        }
    return None if findings is None else finish(findings, check, repairs)


async def _run_all(
    conn: Connection, scope: Scope, checks: Sequence[Check], fix: bool
) -> list[Issue]:
    issues = []
    for check in checks:
        issue = await _one(conn, scope, check, fix)
        if issue is not None:
            issues.append(issue)
    return issues


async def _run(lib: Library, scope: Scope, names: Sequence[str], fix: bool) -> list[Issue]:
    """Every named check, tenant ones (repairing when ``fix``) then deployment ones,
    returned in registry order."""
    chosen = [registry.BY_NAME[name] for name in names]
    tenant = [check for check in chosen if check.level == "tenant"]
    deployment = [check for check in chosen if check.level == "deployment"]
    async with lib.db.tenant_tx(scope.tenant_id) as conn:
        issues = await _run_all(conn, scope, tenant, fix)
    if deployment:
        async with lib.db.admin_tx() as conn:
            issues += await _run_all(conn, scope, deployment, False)
    order = {name: index for index, name in enumerate(registry.CHECK_NAMES)}
    return sorted(issues, key=lambda issue: order[issue.check])


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Axes:
    """The most used values of each axis (up to ``AXIS_TOP``, most rows first), ``''``
    shown as ``(global)``, with their row counts."""

    project_id: Mapping[str, int]
    channel: Mapping[str, int]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthStats:
    """The scope's size: rows of each kind, queued jobs, the approximate bytes, the axes;
    ``per_agent`` when the run looked at one agent."""

    db_size_bytes: int
    memories: int
    episodes: int
    profiles: int
    pending_tasks: int
    axes: Axes
    per_agent: bool


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class HealthReport:
    """A check_health run: the issues in registry order (with what a fix wrote), the
    severity counts and status of what is still wrong, the checks run, the stats, and
    why repairs were skipped (None when they were not)."""

    issues: tuple[Issue, ...]
    severity_summary: SeverityCounts
    status: str
    fixed: bool
    checks_run: tuple[str, ...]
    stats: HealthStats
    repairs_skip_reason: str | None = None


def _axes(rows: list[content_queries.AxisValue]) -> Axes:
    axes: dict[str, dict[str, int]] = {"project_id": {}, "channel": {}}
    for row in rows:  # ordered by axis, count descending, value
        bucket = axes[row.axis]
        if len(bucket) < AXIS_TOP:
            bucket[row.value or "(global)"] = row.count
    return Axes(project_id=axes["project_id"], channel=axes["channel"])


async def _stats(lib: Library, scope: Scope) -> HealthStats:
    async with lib.db.tenant_tx(scope.tenant_id) as conn:
        counts = await content_queries.health_stats(conn, scope.tenant_id, scope.agent)
        axes = await content_queries.health_axis_values(conn, scope.tenant_id, scope.agent)
    return HealthStats(
        db_size_bytes=counts.approx_bytes,
        memories=counts.memories,
        episodes=counts.episodes,
        profiles=counts.profiles,
        pending_tasks=counts.pending_tasks,
        axes=_axes(axes),
        per_agent=scope.agent is not None,
    )


async def scope_for(lib: Library, tenant_id: TenantId, agent_id: str) -> Scope:
    async with lib.db.tenant_tx(tenant_id) as conn:
        dimension = await _dimension(conn, lib)
    return Scope(tenant_id, agent_id or None, lib.settings, lib.embedder is not None, dimension)


async def check_health(
    lib: Library,
    tenant_id: TenantId,
    agent_id: str = "",
    fix: bool = False,
    checks: Sequence[str] = (),
    *,
    paused: bool = False,
) -> HealthReport:
    """Run the registry (or the named checks) over the tenant, one agent when given.

    ``paused``: the caller's tenant or session is in no-persist mode; ``fix`` is then
    downgraded to a read-only run and the answer says so (``repairs_skipped``).
    Unknown check names fail the call with ``unknown_checks`` and ``valid_checks``
    rather than running nothing and reporting a clean bill of health.
    """
    names, unknown = registry.resolve(list(checks))
    if unknown:
        raise unknown_checks(unknown)
    names = names or list(registry.CHECK_NAMES)
    repairs_skipped = fix and paused
    fix = fix and not paused
    scope = await scope_for(lib, tenant_id, agent_id)
    issues = await _run(lib, scope, names, fix)
    counts = summary(await _run(lib, scope, names, False) if fix else issues)
    return HealthReport(
        issues=tuple(issues),
        severity_summary=counts,
        status=status(counts),
        fixed=fix,
        checks_run=tuple(names),
        stats=await _stats(lib, scope),
        repairs_skip_reason=PAUSE_REASON if repairs_skipped else None,
    )
