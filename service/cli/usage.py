"""usage: a tenant's daily calls and tokens, and what previews, excerpts, budgets and the
session ledger saved, as a table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from service.cli.runtime import CliError, Commands, database_url, run_db, shown
from service.config import Settings
from service.db.pool import Database
from service.memory import tenants, usage
from service.memory.library import Library
from service.models import TenantId

COLUMNS = (
    ("day", "<"),
    ("tool", "<"),
    ("calls", ">"),
    ("failed", ">"),
    ("tokens sent", ">"),
    ("saved: previews", ">"),
    ("excerpts", ">"),
    ("budgets", ">"),
    ("ledger", ">"),
    ("saved", ">"),
)


def _share(saved: int, sent: int) -> str:
    """Saved tokens as a share of what full answers would have cost (sent + saved)."""
    return f"{saved / (saved + sent):.1%}" if saved + sent else "-"


def _cells(day: str, tool: str, rows: Sequence[usage.UsageRow]) -> list[str]:
    sent = sum(r.tokens_delivered for r in rows)
    saved = sum(r.tokens_saved for r in rows)
    numbers = (
        sum(r.calls for r in rows),
        sum(r.failures for r in rows),
        sent,
        sum(r.tokens_saved_previews for r in rows),
        sum(r.tokens_saved_excerpts for r in rows),
        sum(r.tokens_saved_budgets for r in rows),
        sum(r.tokens_saved_ledger for r in rows),
    )
    return [day, tool, *(f"{n:,}" for n in numbers), _share(saved, sent)]


def usage_table(rows: Sequence[usage.UsageRow]) -> list[str]:
    """The report's lines: a header, one line per day and tool, and a total line."""
    body = [_cells(r.day.isoformat(), shown(r.tool), [r]) for r in rows]
    body.append(_cells("total", "", rows))
    table = [[name for name, _ in COLUMNS], *body]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    return [
        "  ".join(
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(line, COLUMNS, widths, strict=True)
        ).rstrip()
        for line in table
    ]


async def _tenant_id(db: Database, slug: str) -> TenantId:
    for row in await tenants.list_tenants(db):
        if row.slug == slug:
            return TenantId(row.id)
    raise CliError(f"no tenant {slug!r}")


def cmd_usage(settings: Settings, args: argparse.Namespace) -> None:
    """Print the tenant's usage of the last --days UTC days, newest first."""

    async def work(db: Database) -> list[usage.UsageRow]:
        lib = Library(db, settings)
        return await usage.report(lib, await _tenant_id(db, args.tenant), args.days)

    with database_url(settings) as url:
        rows = run_db(settings, url, work)
    unit = "chars/4" if settings.tokenizer is None else f"tokenizer {settings.tokenizer}"
    print(f"usage of tenant {shown(args.tenant)}, last {args.days} days (UTC; tokens: {unit})")
    if not rows:
        print("no calls recorded")
        return
    for line in usage_table(rows):
        print(line)


def _days(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 3660:
        raise argparse.ArgumentTypeError("expected a number of days from 1 to 3660")
    return int(text)


def add_parsers(commands: Commands) -> None:
    report = commands.add_parser(
        "usage",
        help="a tenant's calls and tokens per day and tool, and what previews, excerpts, "
        "budgets and the session ledger saved",
    )
    report.add_argument("--tenant", metavar="SLUG", required=True, help="the tenant")
    report.add_argument(
        "--days", type=_days, default=7, metavar="N", help="the last N UTC days (default 7)"
    )
    report.set_defaults(run=cmd_usage)
