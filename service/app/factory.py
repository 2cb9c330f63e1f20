"""The Starlette application: MCP at ``/mcp``, bulk endpoints at ``/v1/*``, probes.

``create_app`` is a factory (no module-level state). The MCP endpoint is the SDK's
stateless streamable-HTTP handler mounted as a plain route at ``/mcp`` and at ``/mcp/``
(both serve it: no redirect either way, README "HTTP routes"); it and the ``/v1/*``
routes sit behind the one :class:`~service.app.edge.Edge` (credential, Host/Origin,
limits, lanes, sizes and body timeouts, the response ceiling, the log line, metrics);
the probes have the Host/Origin check too. CORS for the allowed browser origins wraps
them all (:mod:`service.app.cors`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from service.app import background, console, oauth, portability, probes
from service.app.admission import KeyLimits, build_lanes, lane_of_tools
from service.app.cors import Cors
from service.app.credentials import CredentialGate
from service.app.edge import Edge, EdgeDeps, asgi_handler
from service.app.hosts import HostGuard, ProbeGuard, probe_security, transport_security
from service.app.metrics import EdgeMetrics
from service.app.oauth.bearer import BearerAuth
from service.config import Settings
from service.db.embedded import EmbeddedPostgres
from service.db.pool import Database, Planning
from service.db.read_routing import read_replica
from service.mcp import tools
from service.mcp.server import build_mcp_server
from service.memory.library import build_library
from service.memory.queue import backlog, worker
from service.memory.usage import UsageCounter
from service.models import Caller

MCP_PATHS = ("/mcp", "/mcp/")
"""The MCP endpoint answers at both: clients configured with a trailing slash work as they
are, without a redirect (which some clients do not follow on POST)."""
MCP_METHODS = ["GET", "POST", "DELETE", "OPTIONS"]


def create_app(
    settings: Settings,
    database_url: str,
    anonymous: Caller | None = None,
    on_shutdown: Callable[[], None] | None = None,
    embedded: EmbeddedPostgres | None = None,
) -> Starlette:
    """Build the application for ``database_url``; the pool opens in the lifespan.

    ``anonymous`` is the caller used for requests without a key, only when the
    operator set CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true. ``on_shutdown`` runs
    last in the lifespan (the embedded server is stopped there, because uvicorn
    re-raises SIGTERM once the lifespan is done and nothing after it runs).
    ``embedded`` is the embedded Postgres serving ``database_url``, which a
    supervisor restarts whenever it dies.
    """
    db = Database(
        database_url,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        command_timeout=settings.db_command_timeout,
        acquire_timeout=settings.db_acquire_timeout,
        bulk_size=settings.db_bulk_pool_max,
        pooler=settings.db_pooler,
        planning=Planning.of(settings),
        tenant_share=settings.db_tenant_share,
    )
    metrics = (
        EdgeMetrics(spec.name for spec in tools.all_tools()) if settings.metrics_enabled else None
    )
    replica = read_replica(settings, db, metrics)
    lib = build_library(db, settings, replica)
    server = build_mcp_server(lib)
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        # the edge checks Host and Origin for every route, this one included
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=settings.max_request_bytes,
    )
    manager = server.session_manager
    usage = UsageCounter(spec.name for spec in tools.all_tools())
    security = TransportSecurityMiddleware(transport_security(settings))
    read_only = frozenset(spec.name for spec in tools.all_tools() if spec.read_only)
    deps = EdgeDeps(
        lib,
        BearerAuth(lib, anonymous),
        security,
        metrics,
        usage,
        lanes=build_lanes(settings),
        limits=KeyLimits(settings),
        lane_of=lane_of_tools(read_only),
        gate=CredentialGate(settings),
    )
    mcp_edge = Edge(
        deps,
        asgi_handler(StreamableHTTPASGIApp(manager)),
        route="/mcp",
        max_body=settings.max_request_bytes,
        ceiling=True,
        body="whole",
        refuse_methods=frozenset({"GET", "DELETE"}),
    )
    probe_checks = probe_security(settings)
    guard = ProbeGuard(probe_checks)
    metrics_guard = ProbeGuard(probe_checks, check=settings.metrics_host_check)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await db.open()
        try:
            recorded = await worker.start_up(lib)
            async with (
                background.postgres_supervisor(embedded, db),
                replica.running() if replica is not None else contextlib.nullcontext(),
                manager.run(),
                background.embedding_worker(lib, recorded),
                background.write_behind(lib),
                background.usage_flusher(lib, usage),
                background.export_area_sweeper(lib),
                background.oauth_client_sweeper(lib),
            ):
                yield
        finally:
            await lib.aclose()
            await db.close()
            if on_shutdown is not None:
                on_shutdown()

    app = Starlette(
        routes=[
            *probes.routes(db, metrics, guard, metrics_guard, lambda: backlog.backlog(lib)),
            *(Route(path, mcp_edge, methods=MCP_METHODS) for path in MCP_PATHS),
            *portability.routes(deps),
            *oauth.routes(lib, HostGuard(transport_security(settings))),
            *console.routes(lib, HostGuard(transport_security(settings)), usage),
        ],
        middleware=[Middleware(Cors, allowed_origins=settings.allowed_origins)],
        lifespan=lifespan,
    )
    app.state.library = lib
    return app
