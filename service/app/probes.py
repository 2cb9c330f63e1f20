"""Unauthenticated probes: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service.app.metrics import METRICS_CONTENT_TYPE, EdgeMetrics
from service.db.migrate import current_revision, head_revision
from service.db.pool import Database

Endpoint = Callable[[Request], Awaitable[Response]]


async def healthz(request: Request) -> Response:
    """The process is alive (it answers); says nothing about the database."""
    return JSONResponse({"status": "ok"})


def readyz(db: Database, head: str) -> Endpoint:
    """Ready when the database answers and is migrated to ``head``; 503 otherwise."""

    async def endpoint(request: Request) -> Response:
        try:
            revision = await current_revision(db)
        except Exception as exc:  # any failure to reach the database means not ready
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, 503)
        if revision != head:
            body = {"status": "migrations pending", "revision": revision, "head": head}
            return JSONResponse(body, 503)
        return JSONResponse({"status": "ready", "revision": revision})

    return endpoint


def metrics_endpoint(metrics: EdgeMetrics) -> Endpoint:
    """``GET /metrics``: no auth; tenant slugs and counts only, never tenant data."""

    async def endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    return endpoint


def routes(db: Database, metrics: EdgeMetrics | None) -> list[Route]:
    """The probe routes (``/metrics`` only while CPERSONA_METRICS_ENABLED)."""
    probes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz(db, head_revision()), methods=["GET"]),
    ]
    if metrics is not None:
        probes.append(Route("/metrics", metrics_endpoint(metrics), methods=["GET"]))
    return probes
