"""Prometheus metrics of the edge: one registry per application, bounded labels.

:class:`EdgeMetrics` is built by ``create_app`` (nothing module-level). Every label is
bounded, because a label value is a time series for as long as the process lives:

* ``tool``: a registered tool name; ``"none"`` for a request that called no tool
  (initialize, tools/list, a refused request); ``"unknown"`` for a name that is not
  registered, since the caller chooses that string and must not be able to mint series.
* ``outcome``: the dispatcher's outcome (``ok``, ``failed``, ``invalid_input``,
  ``unknown_tool``, ``not_in_tool_set``, store's ``stored``/``skipped``/``rejected``),
  ``response_too_large``, or one derived from the HTTP status (:func:`request_outcome`).
* ``tenant``: the tenant's slug, on authenticated requests only. One series per tenant:
  fine for hundreds or a few thousand tenants; a deployment with far more should read
  per-tenant volume from the usage tables and drop this counter.

Nothing else about a tenant (agent ids, content, keys) ever becomes a label."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

METRICS_CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


NO_TOOL: Final = "none"


UNKNOWN_TOOL: Final = "unknown"


DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


BYTE_BUCKETS: Final = (256, 1024, 4096, 16_384, 65_536, 262_144, 1 << 20, 4 << 20, 16 << 20)


def request_outcome(outcome: str | None, status: int | None) -> str:
    """The outcome label: the dispatcher's or the edge's, else one from the HTTP status."""
    if outcome is not None:
        return outcome
    if status is None:
        return "incomplete"
    if status == 401:
        return "unauthorized"
    if status == 413:
        return "request_too_large"
    if status >= 500:
        return "server_error"
    return "client_error" if status >= 400 else "ok"


class EdgeMetrics:
    """Requests, durations and response bytes per tool and outcome; bytes per tenant."""

    def __init__(self, tools: Iterable[str]) -> None:
        self.registry = CollectorRegistry()
        self._tools = frozenset(tools)
        labels = ("tool", "outcome")
        self.requests = Counter(
            "cpersona_mcp_requests",
            "MCP HTTP requests answered, by tool and outcome.",
            labels,
            registry=self.registry,
        )
        self.duration = Histogram(
            "cpersona_mcp_request_duration_seconds",
            "Time from request to the last response byte, by tool and outcome.",
            labels,
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.response_bytes = Histogram(
            "cpersona_mcp_response_bytes",
            "Response body bytes actually sent, by tool and outcome.",
            labels,
            buckets=BYTE_BUCKETS,
            registry=self.registry,
        )
        self.tenant_bytes = Counter(
            "cpersona_tenant_response_bytes",
            "Response body bytes sent to authenticated callers, by tenant slug.",
            ("tenant",),
            registry=self.registry,
        )
        self.read_routes = Counter(
            "cpersona_read_routes",
            "Read-only tool calls by the database that answered (replica or primary) and "
            "why (in_sync; lagging, unavailable, unchecked: replica bypassed; failed: the "
            "replica failed mid-call and the primary answered; wrote).",
            ("database", "reason"),
            registry=self.registry,
        )
        self.read_lag = Gauge(
            "cpersona_read_replica_lag_seconds",
            "Lag of the read replica at its last check (-1: unknown or unreachable).",
            registry=self.registry,
        )
        self.jobs_pending = Gauge(
            "cpersona_embedding_jobs_pending",
            "Embedding jobs still to run, all tenants, at the scrape (-1: the database did "
            "not answer).",
            registry=self.registry,
        )
        self.passages_pending = Gauge(
            "cpersona_passages_pending",
            "Pending embedding jobs of rows longer than one window, whose passages are "
            "built with them, all tenants, at the scrape (-1: the database did not answer).",
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)

    def tool_label(self, tool: str | None) -> str:
        """The bounded ``tool`` label of a request (see the module docstring)."""
        if tool is None:
            return NO_TOOL
        return tool if tool in self._tools else UNKNOWN_TOOL

    def observe(
        self, *, tool: str | None, outcome: str, tenant: str | None, seconds: float, sent: int
    ) -> None:
        """Record one finished request."""
        label = self.tool_label(tool)
        self.requests.labels(label, outcome).inc()
        self.duration.labels(label, outcome).observe(seconds)
        self.response_bytes.labels(label, outcome).observe(sent)
        if tenant is not None:
            self.tenant_bytes.labels(tenant).inc(sent)

    def routed(self, database: str, reason: str) -> None:
        """One read-only call routed (:class:`service.db.read_routing.RouteObserver`)."""
        self.read_routes.labels(database, reason).inc()

    def replica_lag(self, seconds: float | None) -> None:
        self.read_lag.set(-1.0 if seconds is None else seconds)

    def backlog(self, pending: int | None, passages: int | None) -> None:
        """The embedding backlog read at a scrape (None: it could not be read)."""
        self.jobs_pending.set(-1 if pending is None else pending)
        self.passages_pending.set(-1 if passages is None else passages)

    def render(self) -> bytes:
        """The Prometheus text exposition of this application's registry."""
        return generate_latest(self.registry)
