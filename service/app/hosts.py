"""Host/Origin checks (DNS-rebinding protection) for every route.

``/mcp`` and ``/v1/*`` accept the Host names of :func:`transport_security`. The
probes (``/healthz``, ``/readyz``, ``/metrics``) get the same check with two
additions that a DNS-rebinding page can never produce, because a browser always
sends the name it resolved: a request without a Host header (HAProxy's default
health check), and a Host that is one of this machine's own IP addresses (the
Kubernetes kubelet and Prometheus address a pod by its IP). A page on
``evil.example`` that rebinds its name to this server still sends
``Host: evil.example`` and is refused, so it cannot read the tenant slugs of
``/metrics``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import psutil
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response

from service.config import Settings

LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host/Origin checks of ``/mcp`` and ``/v1``.

    Explicit ``CPERSONA_ALLOWED_HOSTS`` win; a loopback bind defaults to the
    loopback names; any other bind without a list leaves the check off (behind a
    proxy the operator names the public host).
    """
    if settings.allowed_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(settings.allowed_hosts),
            allowed_origins=list(settings.allowed_origins),
        )
    if settings.http_host in LOOPBACK:
        loopback_origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=[*loopback_origins, *settings.allowed_origins],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def own_addresses() -> list[str]:
    """Host values naming this machine by IP: every interface address, with any port."""
    hosts: list[str] = []
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            ip = address.address.split("%", 1)[0]  # an IPv6 scope is never in a Host
            if ":" in ip:
                hosts += [f"[{ip}]", f"[{ip}]:*"]
            elif ip.count(".") == 3:
                hosts += [ip, f"{ip}:*"]
    return hosts


def probe_security(settings: Settings) -> TransportSecuritySettings:
    """The probes' checks: those of ``/mcp`` plus this machine's own IP addresses."""
    base = transport_security(settings)
    if not base.enable_dns_rebinding_protection:
        return base
    hosts = [*base.allowed_hosts, *own_addresses()]
    return base.model_copy(update={"allowed_hosts": hosts})


class ProbeGuard:
    """The Host/Origin check of one probe route (``check=False``: none)."""

    def __init__(self, security: TransportSecuritySettings, *, check: bool = True) -> None:
        self._security = TransportSecurityMiddleware(security)
        self._check = check and security.enable_dns_rebinding_protection

    async def refusal(self, request: Request) -> Response | None:
        """The refusal to send (421 Host, 403 Origin), or None when the request passes."""
        if not self._check:
            return None
        if "host" not in request.headers:  # not a browser: only an Origin can be wrong
            if "origin" in request.headers:
                return Response("Invalid Origin header", status_code=403)
            return None
        return await self._security.validate_request(request, is_post=False)


Endpoint = Callable[[Request], Awaitable[Response]]


def host_allowed(host: str, allowed: list[str]) -> bool:
    """``host`` is one of ``allowed``, where ``name:*`` stands for the name with any port."""
    return host in allowed or any(
        entry.endswith(":*") and host.startswith(entry[:-1]) for entry in allowed
    )


class HostGuard:
    """The Host check alone, for routes every Origin may call (the OAuth documents and
    endpoints, which browser-based clients reach cross-origin): a DNS-rebinding page
    still sends its own name as Host, so checking Host is what refuses it."""

    def __init__(self, security: TransportSecuritySettings) -> None:
        self._allowed = list(security.allowed_hosts)
        self._check = security.enable_dns_rebinding_protection

    def guarded(self, endpoint: Endpoint) -> Endpoint:
        """``endpoint`` behind the check: 421 for a Host this server does not answer to."""

        async def handle(request: Request) -> Response:
            host = request.headers.get("host")
            if self._check and host is not None and not host_allowed(host, self._allowed):
                return Response("Invalid Host header", status_code=421)
            return await endpoint(request)

        return handle
