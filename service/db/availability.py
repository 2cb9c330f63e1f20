"""Whether the database answers, and reconnecting with backoff when it does not.

The pool's connections die with their server (a crash, a restart, a failover, a
network cut). :class:`Availability` is what :class:`~service.db.pool.Database`
consults before every acquire:

- while the database is *up*, requests go through;
- a failure to connect marks it *down*: from then on every request fails at once
  with :class:`~service.errors.DatabaseUnavailable` (its ``retry_after`` is the time
  to the next attempt) instead of each one trying to connect, and a single
  background probe reconnects with capped exponential backoff (0.1 s doubling to
  2 s); when the probe succeeds the pool drops every old connection and the
  database is up again;
- a connection lost in the middle of a request starts the same probe without
  marking the database down (one backend may have died, not the server).

One warning is logged when the database goes down and one line when it is back,
whatever the request rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable

import asyncpg

from service.errors import DatabaseUnavailable
from service.logs import get_logger

log = get_logger("service.db")

FIRST_BACKOFF = 0.1
MAX_BACKOFF = 2.0

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)
"""What a dead, restarting or unreachable server raises (``TimeoutError``, also an
``OSError``, is told apart by the caller: a full pool times out too)."""


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection or the server is gone."""
    if isinstance(exc, TimeoutError):
        return False
    if isinstance(exc, CONNECTION_ERRORS):
        return True
    return isinstance(exc, asyncpg.InterfaceError) and "closed" in str(exc)


Probe = Callable[[], Awaitable[None]]


class Availability:
    """Up/down state of one database, with one reconnecting probe while in doubt.

    ``probe`` must open a fresh connection and run a trivial query (raising a
    connection error when it cannot); the pool's old connections are expired before
    each attempt, so a probe never reuses a connection of the dead server.
    """

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self._down_since: float | None = None
        self._next_attempt = 0.0
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def up(self) -> bool:
        return self._down_since is None

    def check(self) -> None:
        """Raise DatabaseUnavailable at once while the database is down."""
        if self._down_since is None:
            return
        wait = max(1.0, math.ceil(self._next_attempt - time.monotonic()))
        raise DatabaseUnavailable(
            "the database is not reachable; the service is reconnecting", retry_after=wait
        )

    def connect_failed(self, exc: BaseException) -> DatabaseUnavailable:
        """A connection could not be opened: the database is down until a probe succeeds."""
        if self._down_since is None:
            self._down_since = time.monotonic()
            self._next_attempt = self._down_since + FIRST_BACKOFF
            log.warning("database_unavailable", error=type(exc).__name__, detail=str(exc)[:200])
        self._start_probe()
        return DatabaseUnavailable(f"cannot connect to the database ({type(exc).__name__})")

    def connection_lost(self, exc: BaseException) -> DatabaseUnavailable:
        """A connection died mid-request: check the server without marking it down."""
        self._start_probe()
        return DatabaseUnavailable(f"the database connection was lost ({type(exc).__name__})")

    def _start_probe(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._reconnect(), name="database-reconnect"
            )

    def retry_now(self) -> None:
        """Probe at once (the supervisor just restarted the server), backoff reset."""
        self._wake.set()

    async def _pause(self, delay: float) -> bool:
        """Wait ``delay`` seconds or until :meth:`retry_now`; True when woken."""
        self._next_attempt = time.monotonic() + delay
        try:
            await asyncio.wait_for(self._wake.wait(), delay)
        except TimeoutError:
            return False
        self._wake.clear()
        return True

    async def _reconnect(self) -> None:
        delay = FIRST_BACKOFF
        while True:
            if await self._pause(delay):
                delay = FIRST_BACKOFF
            try:
                await self._probe()
            except Exception as exc:  # any failure: still unreachable, try again later
                if self._down_since is None:
                    self._down_since = time.monotonic()
                    log.warning("database_unavailable", error=type(exc).__name__)
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            break
        if self._down_since is not None:
            seconds = round(time.monotonic() - self._down_since, 2)
            log.info("database_reconnected", down_seconds=seconds)
        self._down_since = None

    async def close(self) -> None:
        """Stop a probe in progress (the pool is closing)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
