"""What every health check shares: the scope it runs in, its registry record, and the
severity rules (docs/health.md, "check_health").

A check is a small pair of functions. ``run(conn, scope)`` reads and returns its
findings (or None when there is nothing to say): an ordered JSON object of what this
check measured, one shape per check; it always computes ``repairable`` — the rows *this
run's* fix would write — whether or not the call repairs, so the verdict never depends
on how the check was asked. ``fix(conn, scope)`` writes the repair and returns the
counts it wrote (:class:`Repairs`); it runs only in a fix run, inside the same
transaction, right after its own ``run``. The runner makes an :class:`Issue` of both.

Severities: ``critical`` — reads are wrong or missing right now; ``warn`` — drift
that degrades recall or will grow into a critical issue; ``info`` — an observation,
not a defect. The one de-escalation: a fix-capable issue with ``repairable == 0``
(nothing a fix can write) gets ``needs_human_review`` and a ``hint``, and ``warn``
drops to ``info``; ``critical`` never drops (it is about reads, not repairs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

from service.config import Settings
from service.db.pool import Connection
from service.models import TenantId

Severity = Literal["critical", "warn", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "warn", "info")
Findings = dict[str, Any]
"""What one check measured, in the order it reports it (a shape per check)."""
Level = Literal["tenant", "deployment"]

UNREPAIRABLE_HINT = (
    "Nothing this check's fix can write: every offending row is out of its reach "
    "(locked, or a shape it refuses to rewrite). Repair is an operator decision, "
    "not a maintenance run"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """Where a check looks: one tenant, optionally one agent (by name), and the
    configuration that decides what "wrong" means (caps, the embedding width)."""

    tenant_id: TenantId
    agent: str | None
    settings: Settings
    provider: bool = False  # an embedding provider is configured: NULL vectors can be filled
    dimension: int | None = None  # the configured provider's width; None = unknown


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Repairs:
    """What one check's fix wrote: ``fixed`` rows in all, and the check's own breakdown
    (None where the check has no such count)."""

    fixed: int
    rewritten: int | None = None
    deleted: int | None = None
    enqueued: int | None = None
    requeued: int | None = None
    reparsed: int | None = None
    replaced: int | None = None
    normalized: int | None = None
    mapped: int | None = None
    unmapped: int | None = None
    remaining: int | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Issue:
    """One reported problem: its ``type``, final ``severity`` and the ``check`` that found
    it, the check's ``findings``, what a fix run wrote (``repairs``, None otherwise), and
    the unrepairable rule's verdict: ``needs_human_review`` with ``hint`` (set only when
    the findings carry no hint of their own)."""

    type: str
    severity: Severity
    check: str
    findings: Findings
    repairs: Repairs | None = None
    needs_human_review: bool = False
    hint: str | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SeverityCounts:
    """How many issues of each severity a run reported."""

    critical: int = 0
    warn: int = 0
    info: int = 0


Run = Callable[[Connection, Scope], Awaitable[Findings | None]]
Fix = Callable[[Connection, Scope], Awaitable[Repairs]]


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """A registered check. ``level == "deployment"`` checks read catalogs only (no
    tenant data), run in an admin transaction and never repair."""

    name: str
    severity: Severity
    run: Run
    fix: Fix | None = None
    level: Level = "tenant"

    @property
    def fixable(self) -> bool:
        return self.fix is not None


def finish(findings: Findings, check: Check, repairs: Repairs | None = None) -> Issue:
    """Stamp ``severity`` (the findings' override wins) and ``check``, and apply the
    repairable rule."""
    rest = dict(findings)
    severity: Severity = rest.pop("severity", check.severity)
    kind = rest.pop("type", check.name)
    if not check.fixable or rest.get("repairable") != 0:
        return Issue(type=kind, severity=severity, check=check.name, findings=rest, repairs=repairs)
    hint = None if "hint" in rest else UNREPAIRABLE_HINT
    return Issue(
        type=kind,
        severity="info" if severity == "warn" else severity,
        check=check.name,
        findings=rest,
        repairs=repairs,
        needs_human_review=True,
        hint=hint,
    )


def summary(issues: Iterable[Issue]) -> SeverityCounts:
    counts = {"critical": 0, "warn": 0, "info": 0}
    for issue in issues:
        counts[issue.severity] += 1
    return SeverityCounts(**counts)


def status(counts: SeverityCounts) -> str:
    """Any critical → unhealthy; else any warn → degraded; else healthy (info is not a
    gate signal, so an info-only tenant is healthy with a non-empty ``issues``)."""
    if counts.critical:
        return "unhealthy"
    if counts.warn:
        return "degraded"
    return "healthy"


def exit_code(counts: SeverityCounts, *, strict: bool = False) -> int:
    """The checkup gate: 2 on any critical, 1 on warn under ``strict``, else 0."""
    if counts.critical:
        return 2
    if strict and counts.warn:
        return 1
    return 0
