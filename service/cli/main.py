"""Command line: the only place that parses argv, prints for humans, and exits.

Commands follow design/interface.md. Every command exits non-zero with a
one-line reason on bad input or failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from service.app.factory import create_app
from service.cli import portability
from service.config import Settings, load_settings
from service.db import migrate
from service.db.embedded import EmbeddedPostgres
from service.db.pool import Database
from service.db.queue import Backlog
from service.errors import InvalidInput, ServiceError
from service.logs import configure_logging, get_logger
from service.memory import health, pauses, tenants
from service.memory.library import Library, build_library
from service.memory.operating_context import parse, storage, toml
from service.memory.queue import backlog, worker
from service.models import Caller, TenantId

T = TypeVar("T")
log = get_logger("service.cli")


class CliError(Exception):
    """A failure to report in one line and exit 1."""


@contextlib.contextmanager
def embedded_server(
    settings: Settings, *, keep_running: bool = False
) -> Iterator[EmbeddedPostgres | None]:
    """The embedded server when DATABASE_URL is unset (started, migrated), else None."""
    if not settings.uses_embedded_postgres:
        yield None
        return
    embedded = EmbeddedPostgres(settings.data_dir)
    migrate.upgrade(embedded.start(keep_running=keep_running))
    try:
        yield embedded
    finally:
        if not keep_running:
            embedded.stop()


@contextlib.contextmanager
def database_url(settings: Settings, *, keep_running: bool = False) -> Iterator[str]:
    """The configured database URL, starting the embedded server when needed.

    The embedded database is migrated on every start (it belongs to this
    service); an external one is migrated only by ``cpersona-service migrate``.
    """
    with embedded_server(settings, keep_running=keep_running) as embedded:
        yield str(settings.database_url) if embedded is None else embedded.url()


def run_db(settings: Settings, url: str, work: Callable[[Database], Awaitable[T]]) -> T:
    """Run ``work`` against a short-lived pool (admin commands)."""

    async def main() -> T:
        db = await Database(url, min_size=1, max_size=2).open()
        try:
            return await work(db)
        finally:
            await db.close()

    return asyncio.run(main())


def client_line(settings: Settings, key: str) -> str:
    host = "127.0.0.1" if settings.http_host in ("0.0.0.0", "::") else settings.http_host
    url = f"http://{host}:{settings.http_port}/mcp"
    return f'claude mcp add --transport http cpersona {url} --header "Authorization: Bearer {key}"'


async def _bootstrap(db: Database, settings: Settings) -> str | None:
    """First start of an empty embedded database: tenant ``default`` and one key."""
    if not settings.uses_embedded_postgres or await tenants.count_tenants(db) > 0:
        return None
    await tenants.create_tenant(db, "default", "Default tenant")
    return await tenants.create_key(db, "default", label="first-start")


async def _anonymous_caller(db: Database) -> Caller:
    existing = {row.slug: row for row in await tenants.list_tenants(db)}
    row = existing.get("default") or await tenants.create_tenant(db, "default", "Default tenant")
    return Caller(TenantId(row.id), row.slug, "anonymous", "anonymous", {"*": "read-write"})


async def _prepare_serve(db: Database, settings: Settings) -> Caller | None:
    revision = await migrate.current_revision(db)
    if revision != migrate.head_revision():
        raise CliError(f"database is at {revision}, not head: run `cpersona-service migrate`")
    key = await _bootstrap(db, settings)
    if key is not None:
        print("Created tenant 'default'. Its API key (shown once):")
        print(f"  {key}")
        print("Connect a client, for example:")
        print(f"  {client_line(settings, key)}", flush=True)
    if settings.allow_unauthenticated_http:
        log.warning("serving without authentication (CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true)")
        return await _anonymous_caller(db)
    if not any(row.active_keys for row in await tenants.list_tenants(db)):
        raise CliError(
            "no API key exists: create one with `cpersona-service tenant create SLUG` and "
            "`cpersona-service key create --tenant SLUG`, or set "
            "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true for development"
        )
    return None


def cmd_serve(settings: Settings, args: argparse.Namespace) -> None:
    host = args.host or settings.http_host
    port = args.port or settings.http_port
    settings = dataclasses.replace(settings, http_host=host, http_port=port)
    with embedded_server(settings) as embedded:
        url = str(settings.database_url) if embedded is None else embedded.url()
        anonymous = run_db(settings, url, lambda db: _prepare_serve(db, settings))
        app = create_app(settings, url, anonymous, None if embedded is None else embedded.stop)
        log.info("serving", host=host, port=port, embedded=settings.uses_embedded_postgres)
        uvicorn.run(app, host=host, port=port, log_config=None, access_log=False, lifespan="on")


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        if not settings.uses_embedded_postgres:
            migrate.upgrade(url)
        print(f"database at migration {migrate.head_revision()} (head)")


def cmd_tenant_create(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        row = run_db(settings, url, lambda db: tenants.create_tenant(db, args.slug, args.name))
    print(f"created tenant {row.slug} ({row.id})")


def cmd_tenant_list(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        rows = run_db(settings, url, tenants.list_tenants)
    print(f"{'SLUG':<24} {'ACTIVE KEYS':>11}  {'CREATED':<25} NAME")
    for row in rows:
        print(f"{row.slug:<24} {row.active_keys:>11}  {row.created_at.isoformat():<25} {row.name}")


def cmd_key_create(settings: Settings, args: argparse.Namespace) -> None:
    grants = tenants.parse_grants(args.grant or [])
    with database_url(settings) as url:
        key = run_db(
            settings,
            url,
            lambda db: tenants.create_key(
                db, args.tenant, label=args.label, grants=grants, expires_in_days=args.expires_in
            ),
        )
    print(key)


def _when(value: object) -> str:
    return "-" if value is None else str(value)


def cmd_key_list(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        rows = run_db(settings, url, lambda db: tenants.list_keys(db, args.tenant))
    print(f"{'KEY_ID':<17} {'STATE':<8} {'LABEL':<20} {'LAST USED':<33} GRANTS")
    for row in rows:
        state = "revoked" if row.revoked_at else "active"
        grants = ",".join(f"{agent}={level}" for agent, level in row.grants.items())
        print(f"{row.prefix:<17} {state:<8} {row.label:<20} {_when(row.last_used_at):<33} {grants}")


def cmd_key_revoke(settings: Settings, args: argparse.Namespace) -> None:
    with database_url(settings) as url:
        when = run_db(settings, url, lambda db: tenants.revoke_key(db, args.key_id))
    print(f"revoked {args.key_id} at {when.isoformat()}")


def cmd_db_url(settings: Settings, args: argparse.Namespace) -> None:
    """Print the URL; an embedded server is left running so psql can connect."""
    with database_url(settings, keep_running=True) as url:
        print(url)


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
        print(f"cpersona-service: warning: {args.file}: {warning}", file=sys.stderr)
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


async def _check_head(db: Database) -> None:
    revision = await migrate.current_revision(db)
    if revision != migrate.head_revision():
        raise CliError(f"database is at {revision}, not head: run `cpersona-service migrate`")


@contextlib.asynccontextmanager
async def _library(settings: Settings, url: str) -> AsyncIterator[Library]:
    """A migrated database's library with the configured embedder (background commands)."""
    db = await Database(url, min_size=1, max_size=4).open()
    lib: Library | None = None
    try:
        await _check_head(db)
        lib = build_library(db, settings)
        yield lib
    finally:
        if lib is not None:
            await lib.aclose()
        await db.close()


async def _worker(settings: Settings, url: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with _library(settings, url) as lib:
        recorded = await worker.start_up(lib)
        log.info("worker started", embedding_mode=settings.embedding_mode)
        await worker.run_worker(lib, stop, model_recorded=recorded)
    log.info("worker stopped")


def cmd_worker(settings: Settings, args: argparse.Namespace) -> None:
    """Drain the embedding queue until SIGTERM/SIGINT (the current batch finishes)."""
    with database_url(settings) as url:
        asyncio.run(_worker(settings, url))


class _Progress:
    """Re-embed progress: one rewritten line on a terminal, a plain line every few
    seconds (and the last one) when piped."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stdout.isatty()
        self.printed_at = 0.0

    def update(self, backlog: Backlog) -> None:
        done = max(self.total - backlog.pending - backlog.failed, 0)
        line = f"re-embedding: {done}/{self.total} done, {backlog.failed} failed"
        if self.tty:
            print(f"\r{line}", end="" if backlog.pending else "\n", flush=True)
        elif backlog.pending == 0 or time.monotonic() - self.printed_at >= 5:
            print(line, flush=True)
            self.printed_at = time.monotonic()


async def _reembed(settings: Settings, url: str, args: argparse.Namespace) -> None:
    async with _library(settings, url) as lib:
        if lib.embedder is None:
            raise CliError("embeddings are off (CPERSONA_EMBEDDING_MODE=none): nothing to embed")
        tenant = None if args.tenant is None else await backlog.tenant_by_slug(lib, args.tenant)
        await worker.start_up(lib)
        queued = await backlog.enqueue_reembed(lib, tenant, every_row=args.all, reset=True)
        print(f"queued {queued} rows for embedding with {lib.embedder.name}", flush=True)
        if args.no_wait:
            return
        progress = _Progress((await backlog.backlog(lib, tenant)).pending)
        final = await worker.drain_until_empty(lib, tenant, progress.update)
    if final.failed:
        raise CliError(
            f"{final.failed} rows are still without an embedding after "
            f"{settings.task_max_retries} attempts (see embedding_jobs.last_error)"
        )


def cmd_reembed(settings: Settings, args: argparse.Namespace) -> None:
    """Queue rows for (re-)embedding and, unless --no-wait, drain until none is left."""
    with database_url(settings) as url:
        asyncio.run(_reembed(settings, url, args))


_CHECKUP_QUIET = frozenset({"type", "severity", "check", "hint", "needs_human_review"})


def _issue_detail(issue: dict[str, object]) -> str:
    """The counts of one issue as ``key=value`` pairs on one line."""
    parts = []
    for key, value in issue.items():
        if key not in _CHECKUP_QUIET:
            plain = value is None or isinstance(value, int | float | str)
            parts.append(f"{key}={value if plain else json.dumps(value, ensure_ascii=False)}")
    line = " ".join(parts)
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
        print(f"  repairs skipped: {result['repairs_skip_reason']}")
    for issue in result["issues"]:
        print(f"  {issue['severity']:<8} {issue['check']}: {_issue_detail(issue)}")
        if "hint" in issue:
            print(f"           hint: {issue['hint']}")


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
    db = await Database(url, min_size=1, max_size=2).open()
    lib = build_library(db, settings)
    worst = 0
    try:
        for slug, tenant_id in await _checkup_tenants(lib, args.tenant):
            paused = args.fix and await pauses.active_pause(lib, tenant_id) is not None
            result = await health.check_health(lib, tenant_id, fix=args.fix, paused=paused)
            _print_checkup(slug, result)
            worst = max(worst, health.exit_code(result["severity_summary"], strict=args.strict))
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


def _checkup_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    checkup = commands.add_parser(
        "checkup", help="run check_health for one tenant or all (exit 2 on critical)"
    )
    checkup.add_argument("--tenant", metavar="SLUG", help="only this tenant (default: all)")
    checkup.add_argument("--fix", action="store_true", help="repair what can be repaired")
    checkup.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    checkup.set_defaults(run=cmd_checkup)


def _worker_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worker = commands.add_parser("worker", help="drain the embedding queue (no HTTP)")
    worker.set_defaults(run=cmd_worker)
    reembed = commands.add_parser(
        "reembed", help="queue rows without a current-model embedding and wait for them"
    )
    reembed.add_argument("--tenant", metavar="SLUG", help="only this tenant (default: all)")
    reembed.add_argument(
        "--all", action="store_true", help="every row, even those already embedded by this model"
    )
    reembed.add_argument("--no-wait", action="store_true", help="queue and return at once")
    reembed.set_defaults(run=cmd_reembed)


def cmd_export(settings: Settings, args: argparse.Namespace) -> None:
    """Stream a tenant's memory as JSONL to --output (atomically) or stdout."""
    with database_url(settings) as url:
        summary = run_db(settings, url, lambda db: portability.run_export(db, settings, args))
    print(summary, file=sys.stderr if args.output is None else sys.stdout)


def cmd_import(settings: Settings, args: argparse.Namespace) -> None:
    """Stream a JSONL file (or stdin) into a tenant; prints the result as one JSON line."""
    with database_url(settings) as url:
        result = run_db(settings, url, lambda db: portability.run_import(db, settings, args))
    print(portability.import_outcome(result))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cpersona-service", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(run=cmd_serve)
    commands.add_parser("migrate", help="apply migrations").set_defaults(run=cmd_migrate)
    _tenant_parser(commands)
    _key_parser(commands)
    _context_parser(commands)
    _worker_parsers(commands)
    _checkup_parser(commands)
    portability.add_parsers(commands, cmd_export, cmd_import)
    db = commands.add_parser("db", help="database helpers").add_subparsers(dest="db", required=True)
    db.add_parser("url", help="print the connection URL for psql").set_defaults(run=cmd_db_url)
    return parser


def _tenant_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tenant = commands.add_parser("tenant", help="manage tenants")
    sub = tenant.add_subparsers(dest="tenant_command", required=True)
    create = sub.add_parser("create", help="create a tenant")
    create.add_argument("slug")
    create.add_argument("--name", default="")
    create.set_defaults(run=cmd_tenant_create)
    sub.add_parser("list", help="list tenants").set_defaults(run=cmd_tenant_list)


def _key_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    key = commands.add_parser("key", help="manage API keys")
    sub = key.add_subparsers(dest="key_command", required=True)
    create = sub.add_parser("create", help="create a key (prints only the key)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--label", default="")
    create.add_argument("--grant", action="append", metavar="AGENT=none|read|read-write")
    create.add_argument("--expires-in", type=float, metavar="DAYS")
    create.set_defaults(run=cmd_key_create)
    listing = sub.add_parser("list", help="list a tenant's keys")
    listing.add_argument("--tenant", required=True)
    listing.set_defaults(run=cmd_key_list)
    revoke = sub.add_parser("revoke", help="revoke a key by its KEY_ID")
    revoke.add_argument("key_id")
    revoke.set_defaults(run=cmd_key_revoke)


def _context_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    context = commands.add_parser("context", help="manage a tenant's operating context")
    sub = context.add_subparsers(dest="context_command", required=True)
    setter = sub.add_parser("set", help="validate a TOML file and make it the tenant's context")
    setter.add_argument("--tenant", required=True)
    setter.add_argument("file", metavar="FILE.toml", help="operating-context TOML ('-' = stdin)")
    setter.set_defaults(run=cmd_context_set)
    show = sub.add_parser("show", help="print the tenant's context as TOML")
    show.add_argument("--tenant", required=True)
    show.set_defaults(run=cmd_context_show)
    clear = sub.add_parser("clear", help="remove the tenant's context (dormant again)")
    clear.add_argument("--tenant", required=True)
    clear.set_defaults(run=cmd_context_clear)


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(os.environ, stderr_is_tty=sys.stderr.isatty())
        configure_logging(settings)
        args.run(settings, args)
    except (ServiceError, CliError) as exc:
        print(f"cpersona-service: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
