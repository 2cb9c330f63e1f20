"""The server's connections: who may open them, how long a request head may take, and
which peers' forwarded headers are believed (docs/reliability.md, "The edge (hardening
round two)").

The application bounds request *bodies* (408, :mod:`service.app.bodies`); everything
before the request reaches it is uvicorn's, which bounds neither the time to the first
request nor the time a request line and headers may trickle in. :func:`server_config`
is the one uvicorn configuration of every serving process (``serve``, each of
``serve --workers``, and the tests' server), with :class:`GuardedH11Protocol` as its
HTTP protocol:

- a connection must send a complete request head within ``CPERSONA_HTTP_HEADER_TIMEOUT``
  of opening, and on a kept-alive connection within that bound of the next request's
  first byte; otherwise it is closed (with a ``408`` when part of a head arrived);
- an idle kept-alive connection is closed after ``CPERSONA_HTTP_KEEPALIVE_TIMEOUT``;
- one client address may hold ``CPERSONA_HTTP_MAX_CONNECTIONS_PER_ADDRESS`` open
  connections per process; one more is answered ``429`` with ``Retry-After`` and closed.
  The peers of ``FORWARDED_ALLOW_IPS`` are exempt: every client behind a proxy shares
  its address.

``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the peers of
``FORWARDED_ALLOW_IPS`` (none by default; uvicorn's own default would trust loopback,
where any local process may claim any address): the client address the application sees
(the ``/register`` throttle) is the forwarded one behind a configured proxy and the TCP
peer's otherwise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import json
from typing import Any, ClassVar, Final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.config import Settings
from service.logs import get_logger, throttled

log = get_logger("service.connections")
RETRY_AFTER: Final = 1


def _raw_answer(status: str, body: dict[str, Any], *extra: str) -> bytes:
    """A complete ``Connection: close`` HTTP/1.1 answer, written before any request was
    parsed (h11 only answers a request it has read)."""
    payload = json.dumps(body).encode()
    head = [
        f"HTTP/1.1 {status}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        "connection: close",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def too_many_connections_answer(limit: int) -> bytes:
    message = (
        f"too many open connections from this address (max {limit} per server process); "
        "close some or retry shortly"
    )
    body = {"error": message, "reason": "too_many_connections", "retry_after": RETRY_AFTER}
    return _raw_answer("429 Too Many Requests", body, f"retry-after: {RETRY_AFTER}")


def header_timeout_answer(seconds: float) -> bytes:
    message = f"request line and headers not received within {seconds:g} s"
    return _raw_answer("408 Request Timeout", {"error": message})


class TrustedProxies:
    """The peers of ``FORWARDED_ALLOW_IPS``: addresses and networks, or ``*`` (all)."""

    def __init__(self, items: tuple[str, ...]) -> None:
        self.everyone = items == ("*",)
        self._networks = (
            [] if self.everyone else [ipaddress.ip_network(i, strict=False) for i in items]
        )

    def __contains__(self, host: str | None) -> bool:
        if self.everyone:
            return True
        try:
            address = ipaddress.ip_address(host or "")
        except ValueError:
            return False
        return any(address in network for network in self._networks)


class AddressCounts:
    """Open connections per client address of one process, at most ``limit`` each (0 =
    unlimited); trusted proxies and peers without an address are not counted."""

    def __init__(self, limit: int, proxies: TrustedProxies) -> None:
        self.limit, self._proxies = limit, proxies
        self._open: dict[str, int] = {}

    def admit(self, address: str | None) -> bool:
        """Count a new connection of ``address``; False when the address is at its limit."""
        if not self.limit or address is None or address in self._proxies:
            return True
        held = self._open.get(address, 0)
        if held >= self.limit:
            return False
        self._open[address] = held + 1
        return True

    def release(self, address: str | None) -> None:
        """Forget one admitted connection of ``address`` (nothing for one not counted)."""
        if address is None or address not in self._open:
            return
        left = self._open[address] - 1
        if left > 0:
            self._open[address] = left
        else:
            del self._open[address]


@dataclasses.dataclass(frozen=True)
class ConnectionLimits:
    """What every connection of one serving process shares."""

    header_timeout: float
    counts: AddressCounts

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        proxies = TrustedProxies(settings.forwarded_allow_ips)
        counts = AddressCounts(settings.http_max_connections_per_address, proxies)
        return cls(settings.http_header_timeout, counts)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the per-address cap and the request-head deadline.

    ``limits`` is set on the subclass :func:`server_config` makes for one process.
    """

    limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._admitted: bool = False
        self._address: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else None
        if not self.limits.counts.admit(address):
            self._refuse(address)
            return
        self._admitted, self._address = True, address
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._admitted:
            self.limits.counts.release(self._address)
            self._admitted = False
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def _refuse(self, address: str | None) -> None:
        limit = self.limits.counts.limit
        if (suppressed := throttled("connection_refused", address)) is not None:
            log.warning(
                "connection_refused",
                reason="too_many_connections",
                address=address,
                limit=limit,
                suppressed=suppressed,
            )
        self.transport.write(too_many_connections_answer(limit))
        self.transport.close()

    def _watch_head(self) -> None:
        """Run the head deadline while the connection waits for a request head it has
        begun (or, on a new connection, its first byte); stop it once a head is in."""
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if not waiting:
            self._stop_head_timer()
        elif self._head_timer is None and self.timeout_keep_alive_task is None:
            seconds = self.limits.header_timeout
            self._head_timer = self.loop.call_later(seconds, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        partial, _ = self.conn.trailing_data
        if partial:
            self.transport.write(header_timeout_answer(self.limits.header_timeout))
        self.transport.close()


def server_config(app: Any, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration of one serving process of ``app`` (``overrides``: host,
    port and the like, for the tests' server)."""
    limits = ConnectionLimits.of(settings)
    protocol = type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})
    trusted = settings.forwarded_allow_ips
    options: dict[str, Any] = {
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
        "http": protocol,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": "*" if trusted == ("*",) else list(trusted),
        "timeout_keep_alive": settings.http_keepalive_timeout,
        **overrides,
    }
    return uvicorn.Config(app, **options)
