"""serve, migrate and db url: running the service and reaching its database."""

from __future__ import annotations

import argparse
import dataclasses
import socket

import uvicorn

from service.app.factory import create_app
from service.cli import connections, workers
from service.cli.runtime import (
    CliError,
    Commands,
    check_head,
    database_url,
    embedded_server,
    log,
    run_db,
)
from service.config import Settings
from service.db import migrate
from service.db.pool import Database
from service.memory import tenants
from service.models import Caller, TenantId


def client_line(settings: Settings, key: str) -> str:
    host = "127.0.0.1" if settings.http_host in ("0.0.0.0", "::") else settings.http_host
    url = f"http://{host}:{settings.http_port}/mcp"
    return f'claude mcp add --transport http cpersona {url} --header "Authorization: Bearer {key}"'


async def _bootstrap(db: Database, settings: Settings) -> str | None:
    """First start of an empty embedded database: tenant ``default`` and one key.

    Not when authentication is off: that instance takes no key, so none is made or shown.
    """
    if settings.allow_unauthenticated_http:
        return None
    if not settings.uses_embedded_postgres or await tenants.count_tenants(db) > 0:
        return None
    await tenants.create_tenant(db, "default", "Default tenant")
    return await tenants.create_key(db, "default", label="first-start")


async def _anonymous_caller(db: Database) -> Caller:
    existing = {row.slug: row for row in await tenants.list_tenants(db)}
    row = existing.get("default") or await tenants.create_tenant(db, "default", "Default tenant")
    return Caller(TenantId(row.id), row.slug, "anonymous", "anonymous", {"*": "read-write"})


async def _prepare_serve(db: Database, settings: Settings) -> Caller | None:
    await check_head(db)
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


def listening_socket(host: str, port: int) -> socket.socket:
    """The bound, listening socket ``serve`` will accept on, or a one-line CliError.

    Bound before anything else happens, so a port in use (or a host this machine
    does not have) stops ``serve`` before it starts a database, creates a tenant or
    prints a key and a connect line that would point at another process.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise CliError(
            f"cannot listen on {host}:{port}: {reason} (pick another with --port or PORT)"
        ) from None
    sock.set_inheritable(True)
    return sock


def cmd_serve(settings: Settings, args: argparse.Namespace) -> None:
    host = args.host or settings.http_host
    port = args.port or settings.http_port
    settings = dataclasses.replace(settings, http_host=host, http_port=port)
    count = workers.worker_count(settings, args.workers)
    with listening_socket(host, port) as sock, embedded_server(settings) as embedded:
        url = str(settings.database_url) if embedded is None else embedded.url()
        direct = str(settings.direct_database_url) if embedded is None else url
        anonymous = run_db(settings, direct, lambda db: _prepare_serve(db, settings))
        if count > 1:
            log.info("serving", host=host, port=port, workers=count)
            workers.serve_workers(settings, url, anonymous, embedded, count, sock)
            return
        stop = None if embedded is None else embedded.stop
        app = create_app(settings, url, anonymous, stop, embedded)
        log.info("serving", host=host, port=port, embedded=settings.uses_embedded_postgres)
        uvicorn.Server(connections.server_config(app, settings)).run(sockets=[sock])


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> None:
    """Migrate to head under an advisory lock (concurrent runs wait for each other); a
    database a newer release already migrated is left as it is."""
    with database_url(settings, direct=True) as url:
        if not settings.uses_embedded_postgres:
            migrate.upgrade(url)
        revision = run_db(settings, url, migrate.current_revision)
        if migrate.revision_state(revision) == "ahead":
            print(
                f"database at migration {revision}, ahead of this code's head "
                f"{migrate.head_revision()}: nothing to do"
            )
        else:
            print(f"database at migration {migrate.head_revision()} (head)")


def cmd_db_url(settings: Settings, args: argparse.Namespace) -> None:
    """Print the URL (the direct one when CPERSONA_MIGRATION_DATABASE_URL is set); an
    embedded server is left running so psql can connect."""
    with database_url(settings, keep_running=True, direct=True) as url:
        print(url)


def add_parsers(commands: Commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Serve MCP at /mcp (plus /healthz, /readyz, /metrics, /v1/*). Without "
        "DATABASE_URL an embedded Postgres is started in CPERSONA_DATA_DIR. Every setting is an "
        "environment variable: see the Configuration table in README.md.",
    )
    serve.add_argument(
        "--host",
        help="address to listen on (default: CPERSONA_HTTP_HOST, else 127.0.0.1; 0.0.0.0 "
        "for every interface, then set CPERSONA_ALLOWED_HOSTS)",
    )
    serve.add_argument(
        "--port",
        type=port_number,
        help="TCP port to listen on, 1-65535 (default: PORT, else CPERSONA_HTTP_PORT, else 8402)",
    )
    serve.add_argument(
        "--workers",
        type=workers.worker_number,
        help="serving processes sharing the port, 1-1024 (default: CPERSONA_WORKERS; auto is "
        "the number of cores with DATABASE_URL, 1 on the embedded Postgres)",
    )
    serve.set_defaults(run=cmd_serve)
    commands.add_parser(
        "migrate",
        help="apply migrations to DATABASE_URL",
        description="Migrate the external database named by DATABASE_URL to this release "
        "(the embedded one is migrated on every start).",
    ).set_defaults(run=cmd_migrate)
    db = commands.add_parser("db", help="database helpers").add_subparsers(dest="db", required=True)
    db.add_parser(
        "url",
        help="print the connection URL for psql",
        description="Print the database URL (DATABASE_URL, or the embedded server's, which "
        "is left running so psql can connect).",
    ).set_defaults(run=cmd_db_url)


def port_number(raw: str) -> int:
    """``--port``: a TCP port, 1..65535 (argparse prints the one-line usage error)."""
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 1-65535, got {raw!r}")
    return int(raw)
