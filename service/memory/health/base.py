"""What every health check shares: the scope it runs in, its registry record, and the
severity rules (docs/health.md, "check_health").

A check is a small pair of functions. ``run(conn, scope)`` reads and returns one issue
dict (or None when there is nothing to say); it always computes ``repairable`` — the
rows *this run's* fix would write — whether or not the call repairs, so the verdict
never depends on how the check was asked. ``fix(conn, scope)`` writes the repair and
returns the counts it wrote; it runs only in a fix run, inside the same transaction,
right after its own ``run``.

Severities: ``critical`` — reads are wrong or missing right now; ``warn`` — drift
that degrades recall or will grow into a critical issue; ``info`` — an observation,
not a defect. The one de-escalation: a fix-capable issue with ``repairable == 0``
(nothing a fix can write) gets ``needs_human_review`` and a ``hint``, and ``warn``
drops to ``info``; ``critical`` never drops (it is about reads, not repairs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

from service.config import Settings
from service.db.pool import Connection
from service.models import TenantId

Severity = Literal["critical", "warn", "info"]
SEVERITIES: tuple[Severity, ...] = ("critical", "warn", "info")
Issue = dict[str, Any]
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


Run = Callable[[Connection, Scope], Awaitable[Issue | None]]
Fix = Callable[[Connection, Scope], Awaitable[dict[str, int]]]


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


def finish(issue: Issue, check: Check) -> Issue:
    """Stamp ``severity`` (the runner's override wins) and ``check``, apply the
    repairable rule, and order the keys ``type, severity, check, ...``."""
    severity = issue.pop("severity", check.severity)
    body: Issue = {"type": issue.pop("type", check.name), "severity": severity}
    body["check"] = check.name
    body.update(issue)
    if check.fixable and body.get("repairable") == 0:
        body["needs_human_review"] = True
        body.setdefault("hint", UNREPAIRABLE_HINT)
        if body["severity"] == "warn":
            body["severity"] = "info"
    return body


def summary(issues: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"critical": 0, "warn": 0, "info": 0}
    for issue in issues:
        counts[issue["severity"]] += 1
    return counts


def status(counts: Mapping[str, int]) -> str:
    """Any critical → unhealthy; else any warn → degraded; else healthy (info is not a
    gate signal, so an info-only tenant is healthy with a non-empty ``issues``)."""
    if counts.get("critical"):
        return "unhealthy"
    if counts.get("warn"):
        return "degraded"
    return "healthy"


def exit_code(counts: Mapping[str, int], *, strict: bool = False) -> int:
    """The checkup gate: 2 on any critical, 1 on warn under ``strict``, else 0."""
    if counts.get("critical"):
        return 2
    if strict and counts.get("warn"):
        return 1
    return 0
