"""Unauthenticated probes: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``.

Every probe passes the Host/Origin check (:class:`~service.app.hosts.ProbeGuard`),
so a DNS-rebinding page cannot read them; ``/metrics`` skips it only when the
operator says so (``CPERSONA_METRICS_HOST_CHECK=false``).

- ``/healthz`` says the process answers, nothing about the database: a liveness
  probe must not restart a process whose database is down (it heals on its own).
- ``/readyz`` is 200 while the database answers within :data:`PROBE_SECONDS` and is
  at or ahead of this code's head revision (during a rolling deploy the new
  release migrates first; its migrations are additive, so old replicas stay
  ready); 503 with the reason otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service.app.hosts import ProbeGuard
from service.app.metrics import METRICS_CONTENT_TYPE, EdgeMetrics
from service.db.migrate import current_revision, head_revision, revision_state
from service.db.pool import Database
from service.db.queue import Backlog
from service.errors import Unavailable

Endpoint = Callable[[Request], Awaitable[Response]]
PROBE_SECONDS = 2.0
"""How long ``/readyz`` waits for the database (orchestrators time probes out at 3 s)."""


def guarded(guard: ProbeGuard, endpoint: Endpoint) -> Endpoint:
    """``endpoint`` behind the Host/Origin check."""

    async def checked(request: Request) -> Response:
        refusal = await guard.refusal(request)
        return refusal if refusal is not None else await endpoint(request)

    return checked


async def healthz(request: Request) -> Response:
    """The process is alive (it answers); says nothing about the database."""
    return JSONResponse({"status": "ok"})


def readyz(db: Database, head: str) -> Endpoint:
    """Ready when the database answers and is migrated to ``head`` or beyond."""

    async def endpoint(request: Request) -> Response:
        try:
            revision = await asyncio.wait_for(current_revision(db), PROBE_SECONDS)
        except Unavailable as exc:
            retry = {"retry-after": str(max(1, round(exc.retry_after)))}
            return JSONResponse({"status": "unavailable", "error": exc.reason}, 503, retry)
        except Exception as exc:  # any failure to reach the database means not ready
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, 503)
        state = revision_state(revision)
        if state in ("unmigrated", "behind"):
            pending = {"status": "migrations pending", "revision": revision, "head": head}
            return JSONResponse(pending, 503)
        ready: dict[str, object] = {"status": "ready", "revision": revision}
        return JSONResponse(ready if state == "head" else {**ready, "head": head, "ahead": True})

    return endpoint


BacklogReader = Callable[[], Awaitable[Backlog]]


def metrics_endpoint(metrics: EdgeMetrics, backlog: BacklogReader | None = None) -> Endpoint:
    """``GET /metrics``: no auth; tenant slugs and counts only, never tenant data. The
    embedding backlog (jobs and passages pending) is read at the scrape, within
    :data:`PROBE_SECONDS`; a database that does not answer shows -1, never a failed
    scrape."""

    async def endpoint(request: Request) -> Response:
        if backlog is not None:
            try:
                found = await asyncio.wait_for(backlog(), PROBE_SECONDS)
            except Exception:  # the scrape still answers: the counters are the process's
                metrics.backlog(None, None)
            else:
                metrics.backlog(found.pending, found.passages_pending)
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    return endpoint


def routes(
    db: Database,
    metrics: EdgeMetrics | None,
    guard: ProbeGuard,
    metrics_guard: ProbeGuard,
    backlog: BacklogReader | None = None,
) -> list[Route]:
    """The probe routes (``/metrics`` only while CPERSONA_METRICS_ENABLED)."""
    probes = [
        Route("/healthz", guarded(guard, healthz), methods=["GET"]),
        Route("/readyz", guarded(guard, readyz(db, head_revision())), methods=["GET"]),
    ]
    if metrics is not None:
        endpoint = guarded(metrics_guard, metrics_endpoint(metrics, backlog))
        probes.append(Route("/metrics", endpoint, methods=["GET"]))
    return probes
