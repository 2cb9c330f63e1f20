"""context set|show|clear: a tenant's operating context from a TOML file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service.cli.runtime import CliError, Commands, database_url, run_db, shown
from service.config import Settings
from service.errors import InvalidInput
from service.memory.operating_context import parse, storage, toml


def _read_context_file(path: str) -> str:
    """The TOML text at ``path`` (``-`` = stdin), with one-line errors."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None


def cmd_context_set(settings: Settings, args: argparse.Namespace) -> None:
    """Validate first (no database is started for a bad file), then store."""
    text = _read_context_file(args.file)
    try:
        parse.parse(text)
    except InvalidInput as exc:
        raise CliError(f"{args.file}: {exc.message}") from None
    with database_url(settings) as url:
        stored = run_db(settings, url, lambda db: storage.set_context(db, args.tenant, text))
    for warning in stored.warnings:
        print(f"cpersona-service: warning: {args.file}: {shown(warning)}", file=sys.stderr)
    ctx = stored.context
    print(
        f"set the operating context of tenant {args.tenant}: revision {ctx.revision!r}, "
        f"enforce {ctx.enforce}, {len(ctx.project_ids)} project ids, "
        f"{len(ctx.defaults)} defaults, {len(ctx.doctrine)} doctrine sections"
    )


def cmd_context_show(settings: Settings, args: argparse.Namespace) -> None:
    """Print the stored context as TOML that ``context set`` accepts back."""
    with database_url(settings) as url:
        stored = run_db(settings, url, lambda db: storage.show_context(db, args.tenant))
    if stored is None:
        print(f"tenant {args.tenant} has no operating context (dormant)")
        return
    print(f"# operating context of tenant {args.tenant}, set {stored.updated_at.isoformat()}")
    print(toml.to_toml(stored.context), end="")


def cmd_context_clear(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        removed = run_db(settings, url, lambda db: storage.clear_context(db, args.tenant))
    if removed is None:
        print(f"tenant {args.tenant} has no operating context; nothing to clear")
    else:
        print(f"cleared the operating context of tenant {args.tenant} (revision {removed!r})")


def add_parsers(commands: Commands) -> None:
    context = commands.add_parser("context", help="manage a tenant's operating context")
    sub = context.add_subparsers(dest="context_command", required=True)
    setter = sub.add_parser("set", help="validate a TOML file and make it the tenant's context")
    setter.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    setter.add_argument("file", metavar="FILE.toml", help="operating-context TOML ('-' = stdin)")
    setter.set_defaults(run=cmd_context_set)
    show = sub.add_parser("show", help="print the tenant's context as TOML")
    show.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    show.set_defaults(run=cmd_context_show)
    clear = sub.add_parser("clear", help="remove the tenant's context (dormant again)")
    clear.add_argument("--tenant", required=True, metavar="SLUG", help="the tenant's slug")
    clear.set_defaults(run=cmd_context_clear)
