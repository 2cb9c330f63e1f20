"""Read routing: read-only work goes to a streaming replica while it keeps up.

:class:`ReadReplica` owns the pool to the replica (``CPERSONA_READ_DATABASE_URL``) and
watches it: a monitor task asks the primary where its write-ahead log ends and the
replica how far it has replayed, every ``interval`` seconds. The replica is *usable*
while it answers and lags at most ``max_lag`` seconds; otherwise :meth:`ReadReplica.run`
gives the work to the primary until a later check finds it usable again. A call that
fails on the replica because the replica went away (connection lost, shut down, a
recovery conflict) marks it unusable at once and runs again on the primary, so a
replica that stops mid-request costs that request a retry, never an error.

Lag is 0 when the replica has replayed everything the primary had written when the
check began; otherwise it is the smaller of two upper bounds of its staleness: the
seconds since the last transaction it replayed committed, and the seconds since a check
last found it caught up. An idle primary therefore reads as lag 0, not as the age of
its last commit; a replica whose WAL receiver is cut off is noticed because the
primary's position moves on without it.

Every call is counted by the database that answered it, through the observer (the
Prometheus counter ``cpersona_read_routes_total{database, reason}``, next to the lag
gauge); a change of state
is logged once (``read_replica_bypassed`` with the reason, ``read_replica_in_use``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal, Protocol, TypeVar

import asyncpg

from service.config import Settings
from service.db.pool import Connection, Database, Planning
from service.db.sql import QUERIES
from service.errors import DatabaseNotOpen, DatabaseUnavailable
from service.logs import get_logger

log = get_logger("service.db.read_routing")
T = TypeVar("T")

Reason = Literal["in_sync", "lagging", "unavailable", "unchecked"]
REPLICA_FAILURES: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.OperatorInterventionError,  # admin/crash shutdown, cancelled, database dropped
    asyncpg.SerializationError,  # "canceling statement due to conflict with recovery"
    DatabaseUnavailable,
    DatabaseNotOpen,
)
"""Errors of a call on the replica that mean the replica, not the call, failed."""


class RouteObserver(Protocol):
    """Where routing decisions and measured lag are reported (the metrics)."""

    def routed(self, database: str, reason: str) -> None: ...

    def replica_lag(self, seconds: float | None) -> None: ...


async def wal_position(conn: Connection) -> str:
    return str(await conn.fetchval(QUERIES["wal_position"]))


@dataclasses.dataclass(frozen=True, slots=True)
class Progress:
    standby: bool
    caught_up: bool
    since_replay: float | None


async def replica_progress(conn: Connection, position: str) -> Progress:
    row = await conn.fetchrow(QUERIES["replica_progress"], position)
    if row is None:  # a SELECT without FROM always has its one row
        raise DatabaseUnavailable("the replica did not report its progress")
    since = row["since_replay"]
    return Progress(bool(row["standby"]), bool(row["caught_up"]), since)


def lag_of(progress: Progress, started: float, caught_up_at: float | None) -> float | None:
    """Seconds the replica may be behind, measured by a check begun at ``started``
    (monotonic) when it was last found caught up at ``caught_up_at``; None: unknown,
    which counts as too far behind."""
    if progress.caught_up or not progress.standby:
        return 0.0
    bounds = [] if progress.since_replay is None else [progress.since_replay]
    if caught_up_at is not None:
        bounds.append(started - caught_up_at)
    return max(0.0, min(bounds)) if bounds else None


def failure_of(exc: BaseException) -> BaseException | None:
    """The replica failure in ``exc``'s chain, if any (errors may arrive wrapped)."""
    chained: BaseException | None = exc
    for _ in range(8):  # a chain is short; a cycle must not loop forever
        if chained is None:
            return None
        if isinstance(chained, REPLICA_FAILURES):
            return chained
        chained = chained.__cause__ or chained.__context__
    return None


class ReadReplica:
    """A streaming replica that takes read-only work while it keeps up with ``primary``."""

    def __init__(
        self,
        replica: Database,
        primary: Database,
        *,
        max_lag: float,
        observer: RouteObserver | None = None,
    ) -> None:
        self.db = replica
        self._primary = primary
        self.max_lag = max_lag
        self.interval = min(1.0, max(0.1, max_lag / 4))
        self._timeout = max(2.0, 2 * self.interval)
        self._observer = observer
        self.reason: Reason = "unchecked"
        self.lag: float | None = None
        self._caught_up_at: float | None = None
        self._opened = False

    @property
    def usable(self) -> bool:
        return self.reason == "in_sync"

    async def run(self, work: Callable[[Database | None], Awaitable[T]]) -> T:
        """``work(replica)`` while the replica is usable, else ``work(None)`` (the caller
        uses the primary); rerun as ``work(None)`` when the replica fails during it.
        Counts the database that answered, and why."""
        if not self.usable:
            self._count("primary", self.reason)
            return await work(None)
        try:
            result = await work(self.db)
        except Exception as exc:
            reason = self._rerun_reason(exc)
            if reason is None:
                self._count("replica", "in_sync")  # the replica answered, with an error
                raise
            self._count("primary", reason)
            return await work(None)
        self._count("replica", "in_sync")
        return result

    def _rerun_reason(self, exc: BaseException) -> str | None:
        """Why a call that raised ``exc`` on the replica runs again on the primary, or
        None: the replica failed (``failed``: it is bypassed from now on, until a check
        finds it usable) or the call wrote (``wrote``: a routing mistake, logged; the
        replica stays in use)."""
        if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
            log.warning("read_only_call_wrote", hint="this tool must run on the primary")
            return "wrote"
        failure = failure_of(exc)
        if failure is None:
            return None
        self._set("unavailable", None, error=type(failure).__name__)
        return "failed"

    def _count(self, database: str, reason: str) -> None:
        if self._observer is not None:
            self._observer.routed(database, reason)

    async def check(self) -> None:
        """Measure the replica once (bounded in time) and update the routing state."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(self._timeout):
                progress = await self._measure()
        except Exception as exc:  # down, unreachable, starting: not usable for now
            self._set("unavailable", None, error=type(exc).__name__)
            return
        lag = lag_of(progress, started, self._caught_up_at)
        if progress.caught_up or not progress.standby:
            self._caught_up_at = started
        usable = lag is not None and lag <= self.max_lag
        self._set("in_sync" if usable else "lagging", lag)

    async def _measure(self) -> Progress:
        async with self._primary.admin_conn() as conn:
            position = await wal_position(conn)
        if not self._opened:
            await self.db.open()
            self._opened = True
        async with self.db.admin_conn() as conn:
            return await replica_progress(conn, position)

    def _set(self, reason: Reason, lag: float | None, *, error: str | None = None) -> None:
        changed = reason != self.reason
        self.reason, self.lag = reason, lag
        if self._observer is not None:
            self._observer.replica_lag(lag)
        if not changed:
            return
        if reason == "in_sync":
            log.info("read_replica_in_use", lag_seconds=lag)
        else:
            log.warning(
                "read_replica_bypassed",
                reason=reason,
                lag_seconds=None if lag is None else round(lag, 3),
                max_lag_seconds=self.max_lag,
                error=error,
            )

    async def _monitor(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.check()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ReadReplica]:
        """Check once, watch the replica until the block ends, then close its pool."""
        await self.check()
        task = asyncio.create_task(self._monitor(), name="read-replica-monitor")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await self.db.close()


def read_replica(
    settings: Settings, primary: Database, observer: RouteObserver | None = None
) -> ReadReplica | None:
    """The configured read replica (CPERSONA_READ_DATABASE_URL), or None without one.

    Its pool starts empty (``min_size`` 0), so a replica that is down at start-up
    delays nothing: the primary answers until a check finds the replica usable.
    """
    if not settings.read_database_url:
        return None
    replica = Database(
        settings.read_database_url,
        min_size=0,
        max_size=settings.db_pool_max,
        command_timeout=settings.db_command_timeout,
        pooler=settings.db_pooler,
        planning=Planning.of(settings),
        tenant_share=settings.db_tenant_share,
    )
    return ReadReplica(replica, primary, max_lag=settings.read_max_lag_secs, observer=observer)
