"""Request bodies that cannot hold the server: read timeouts and a minimum rate.

A client that declares a body and then sends it slowly (or not at all) would hold
its request, and whatever the handler took for it, for as long as it likes.
:class:`BodyGuard` wraps an ASGI ``receive`` and bounds both ways of stalling:

- each part of the body must arrive within ``CPERSONA_BODY_READ_TIMEOUT`` seconds
  (a client that went quiet);
- once the body has been arriving for ``GRACE_SECONDS``, it must have averaged at
  least ``CPERSONA_BODY_MIN_RATE`` bytes per second (a client that trickles a byte
  at a time, each within the timeout).

Either raises :class:`BodyTimedOut`, which the edge answers with ``408`` and a JSON
body (or, for a stream already being answered, drops). The same module names the
other ways a client ends an exchange early: :class:`ClientGone` (it disconnected)
and :class:`ClientStalled` (it stopped reading a streamed answer).
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import Message, Receive

GRACE_SECONDS = 5.0
"""How long a body may arrive before the minimum rate applies (a slow start, TCP
slow-start, a client that computes its first line)."""


class ClientGone(Exception):
    """The client disconnected; stop working for it."""

    outcome = "client_gone"


class ClientStalled(ClientGone):
    """The client stopped reading a streamed answer for longer than the stall timeout."""

    outcome = "client_stalled"


class BodyTimedOut(Exception):
    """The request body stalled or arrived too slowly (answered 408)."""


class BodyTooLarge(Exception):
    """The request body passed its size limit while it arrived (answered 413)."""


class BodyGuard:
    """Wraps ``receive`` with the read timeout and the minimum transfer rate.

    After the body's last part the guard only passes messages through (a handler
    may wait for ``http.disconnect`` while it streams its answer).
    """

    def __init__(self, receive: Receive, *, timeout: float, min_rate: int) -> None:
        self._receive = receive
        self._timeout = timeout
        self._min_rate = min_rate
        self._started = time.monotonic()
        self._received = 0
        self._done = False

    async def __call__(self) -> Message:
        if self._done:
            return await self._receive()
        wait, why = self._budget()
        try:
            message = await asyncio.wait_for(self._receive(), wait)
        except TimeoutError:
            raise BodyTimedOut(why) from None
        if message["type"] == "http.request":
            self._received += len(message.get("body", b""))
            self._done = not message.get("more_body", False)
        return message

    def _budget(self) -> tuple[float, str]:
        """Seconds the next part may take, and what to say when it takes longer."""
        idle = (
            f"no part of the request body arrived for {self._timeout:g} s "
            "(CPERSONA_BODY_READ_TIMEOUT)"
        )
        if self._min_rate <= 0:
            return self._timeout, idle
        now = time.monotonic()
        # the moment the bytes so far fall below the minimum average rate
        due = self._started + GRACE_SECONDS + self._received / self._min_rate
        if due - now >= self._timeout:
            return self._timeout, idle
        slow = (
            f"request body too slow: {self._received} bytes in {now - self._started:.1f} s, "
            f"under the minimum of {self._min_rate} bytes/s (CPERSONA_BODY_MIN_RATE)"
        )
        return max(due - now, 0.001), slow


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body (for handlers that need it at once), at most ``limit`` bytes.

    Raises ClientGone on a disconnect, BodyTooLarge past ``limit``, and whatever the
    ``receive`` raises (BodyTimedOut from a :class:`BodyGuard`).
    """
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        part = message.get("body", b"")
        size += len(part)
        if size > limit:
            raise BodyTooLarge
        parts.append(part)
        if not message.get("more_body", False):
            return b"".join(parts)


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields ``body`` once, then the real messages (a disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
