"""checkup: check_health from the command line, with exit codes for a deploy gate."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from service.cli.runtime import CliError, Commands, database_url, short_lived, shown
from service.config import Settings
from service.mcp import pausing
from service.mcp.render import health as render_health
from service.memory import health, tenants
from service.memory.library import Library, build_library
from service.models import TenantId

_CHECKUP_QUIET = frozenset({"type", "severity", "check", "hint", "needs_human_review"})


def _issue_detail(issue: dict[str, object]) -> str:
    """The counts of one issue as ``key=value`` pairs on one line."""
    parts = []
    for key, value in issue.items():
        if key not in _CHECKUP_QUIET:
            plain = value is None or isinstance(value, int | float | str)
            parts.append(f"{key}={value if plain else json.dumps(value, ensure_ascii=False)}")
    line = shown(" ".join(parts))
    return line if len(line) <= 160 else line[:157] + "..."


def _print_checkup(slug: str, result: dict[str, Any]) -> None:
    counts = result["severity_summary"]
    fixed = ", repaired" if result["fixed"] else ""
    print(
        f"tenant {slug}: {result['status']} ({counts['critical']} critical, {counts['warn']} warn, "
        f"{counts['info']} info; {len(result['checks_run'])} checks, "
        f"{result['total_memories']} memories{fixed})"
    )
    if result.get("repairs_skipped"):
        print(f"  repairs skipped: {shown(result['repairs_skip_reason'])}")
    for issue in result["issues"]:
        print(f"  {issue['severity']:<8} {shown(issue['check'])}: {_issue_detail(issue)}")
        if "hint" in issue:
            print(f"           hint: {shown(issue['hint'])}")


async def _checkup_tenants(lib: Library, slug: str | None) -> list[tuple[str, TenantId]]:
    rows = [(row.slug, TenantId(row.id)) for row in await tenants.list_tenants(lib.db)]
    if slug is None:
        return rows
    chosen = [row for row in rows if row[0] == slug]
    if not chosen:
        raise CliError(f"no tenant {slug!r}")
    return chosen


async def _checkup(settings: Settings, url: str, args: argparse.Namespace) -> int:
    """check_health over one tenant or all; the worst gate code (see health.exit_code)."""
    db = await short_lived(settings, url, max_size=2).open()
    lib = build_library(db, settings)
    worst = 0
    try:
        for slug, tenant_id in await _checkup_tenants(lib, args.tenant):
            paused = args.fix and await pausing.is_paused(lib, tenant_id)
            result = await health.check_health(lib, tenant_id, fix=args.fix, paused=paused)
            _print_checkup(slug, render_health.health_report(result))
            worst = max(worst, health.exit_code(result.severity_summary, strict=args.strict))
    finally:
        await lib.aclose()
        await db.close()
    return worst


def cmd_checkup(settings: Settings, args: argparse.Namespace) -> None:
    """Exit 2 on any critical issue, 1 on a warn with --strict, else 0 (a CI gate)."""
    with database_url(settings) as url:
        code = asyncio.run(_checkup(settings, url, args))
    if code:
        raise SystemExit(code)


def add_parsers(commands: Commands) -> None:
    checkup = commands.add_parser(
        "checkup", help="run check_health for one tenant or all (exit 2 on critical)"
    )
    checkup.add_argument("--tenant", metavar="SLUG", help="only this tenant (default: all)")
    checkup.add_argument("--fix", action="store_true", help="repair what can be repaired")
    checkup.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    checkup.set_defaults(run=cmd_checkup)
