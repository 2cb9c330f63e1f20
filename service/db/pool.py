"""The asyncpg pool and the two kinds of transaction the service runs.

``Database`` is built early and opened in the application lifespan; ``.pool``
raises before ``open()`` so lifecycle mistakes fail loudly.

Every operation is one transaction. A *tenant* transaction switches to the
``cpersona_app`` role (no BYPASSRLS, not the table owner) and sets the
transaction-local ``app.tenant_id`` that the row-level-security policies read,
so a query that forgot its tenant filter still cannot see another tenant's
rows. Both settings are transaction-local (``set_config(..., true)``), which
keeps pooled connections clean and works behind PgBouncer in transaction mode.
An *admin* transaction (tenants, API keys, migrations checks) runs as the
connecting role.

Every acquire is bounded: a request waits at most ``acquire_timeout`` seconds for a
connection and then gets :class:`~service.errors.DatabaseBusy` (the edge answers 503
with Retry-After), and while the database is down (:mod:`service.db.availability`)
it fails at once with :class:`~service.errors.DatabaseUnavailable`. Driver errors
that mean the server is gone are translated into the latter, never leaked.

Two pools share the server: the main one for tools and control-plane reads, and a
small *bulk* pool for work paced by a client (a streamed export or import), used
inside :meth:`Database.bulk_lane`. A client that reads or writes slowly can then
hold at most the bulk pool's connections, never the ones the tools need.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Literal, TypeAlias

import asyncpg
from pgvector.asyncpg import register_vector

from service.config import DbPooler, Settings
from service.config.recall import DEFAULT_HNSW_EF_SEARCH, DEFAULT_RANDOM_PAGE_COST
from service.db import sql
from service.db.availability import Availability, is_connection_error
from service.db.pooler import connect_options
from service.db.share import TenantShare, places_of
from service.errors import DatabaseBusy, DatabaseNotOpen, DatabaseUnavailable
from service.models import TenantId

Connection: TypeAlias = (
    "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
)
APP_ROLE = "cpersona_app"
CONNECT_TIMEOUT = 5.0
"""Seconds to open one connection (asyncpg's default of 60 would hold a request
that long against a server that does not answer)."""
MAX_CACHED_STATEMENT_CHARS = 64 * 1024
"""Statements up to this length stay in asyncpg's per-connection statement cache
(asyncpg's default caches only up to 15 KiB). The recall statement is longer than that:
uncached, every recall paid an extra round trip to parse it and Postgres parsed,
analysed and rewrote its thirty-odd CTEs again (about 2 ms of a 10k recall)."""

_ENTER = sql.QUERIES["enter_tenant"]
_ENTER_CACHED = sql.QUERIES["enter_tenant_cached_plans"]
_LEARN_ARRAY_CODECS = sql.QUERIES["learn_array_codecs"]
_bulk: contextvars.ContextVar[bool] = contextvars.ContextVar("cpersona_bulk_lane", default=False)


async def _init_connection(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """Register codecs once per connection: jsonb as Python objects, vectors, and the
    array types the named queries use (:func:`_learn_array_codecs`)."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await register_vector(conn)
    await _learn_array_codecs(conn)


async def _learn_array_codecs(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """Have asyncpg introspect the queries' array types now, in a transaction that rolls
    back.

    asyncpg learns a type it has no codec for on its first use, and switches ``jit`` off
    and back on around that introspection with session-level ``set_config``. Inside a
    committed tenant transaction that leaves ``jit`` set for the session, which behind
    PgBouncer is whichever client gets the server connection next. The codec cache is
    per client connection, so learning the types once here, and rolling the settings
    back, keeps every later transaction free of it.
    """
    learning = conn.transaction()
    await learning.start()
    try:
        await conn.prepare(_LEARN_ARRAY_CODECS)
    finally:
        await learning.rollback()


class _PooledConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query.

    Every setting the service makes is transaction-local (``set_config(..., true)``),
    so there is no session state to reset; skipping ``RESET ALL`` and friends saves a
    round trip on every release.
    """

    def get_reset_query(self) -> str:
        return ""


@dataclasses.dataclass(frozen=True, slots=True)
class Planning:
    """The planner settings every tenant transaction sets, transaction-local (safe behind
    a transaction pooler): HNSW's search breadth (CPERSONA_HNSW_EF_SEARCH) in both kinds,
    the cost of a random page read (CPERSONA_RANDOM_PAGE_COST) in those that plan per call.
    One value, so a new setting is added here and in ``enter_tenant``, not at every place
    that builds a :class:`Database`."""

    hnsw_ef_search: int = DEFAULT_HNSW_EF_SEARCH
    random_page_cost: float = DEFAULT_RANDOM_PAGE_COST

    @classmethod
    def of(cls, settings: Settings) -> Planning:
        """The operator's settings."""
        return cls(settings.hnsw_ef_search, settings.random_page_cost)


class Database:
    """Owns the pools; hands out tenant-scoped and admin transactions."""

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        command_timeout: float = 30.0,
        acquire_timeout: float = 5.0,
        bulk_size: int = 2,
        pooler: DbPooler = "none",
        planning: Planning = Planning(),
        tenant_share: float = 1.0,
    ) -> None:
        self.dsn = dsn
        self.pooler = pooler
        self.planning = planning
        self._breadth = str(planning.hnsw_ef_search)
        self._page_cost = str(planning.random_page_cost)
        self._min_size = min_size
        self._max_size = max_size
        self._bulk_size = bulk_size
        self._command_timeout = command_timeout
        self._acquire_timeout = acquire_timeout
        self.share = TenantShare(places_of(max_size, tenant_share))
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None
        self._bulk_pool: asyncpg.Pool[asyncpg.Record] | None = None
        self.availability = Availability(self._probe)

    @property
    def pool(self) -> asyncpg.Pool[asyncpg.Record]:
        if self._pool is None:
            raise DatabaseNotOpen()
        return self._pool

    async def _create_pool(self, min_size: int, max_size: int) -> asyncpg.Pool[asyncpg.Record]:
        return await asyncpg.create_pool(
            self.dsn,
            min_size=min_size,
            max_size=max_size,
            command_timeout=self._command_timeout,
            timeout=min(CONNECT_TIMEOUT, self._acquire_timeout),
            init=_init_connection,
            connection_class=_PooledConnection,
            max_cacheable_statement_size=MAX_CACHED_STATEMENT_CHARS,
            **connect_options(self.pooler),
        )

    async def open(self) -> Database:
        try:
            self._pool = await self._create_pool(self._min_size, self._max_size)
            self._bulk_pool = await self._create_pool(0, self._bulk_size)
        except (OSError, asyncpg.PostgresError) as exc:
            await self.close()
            raise DatabaseUnavailable(f"cannot connect to the database: {exc}") from exc
        return self

    async def close(self) -> None:
        await self.availability.close()
        for pool in (self._bulk_pool, self._pool):
            if pool is not None:
                await pool.close()
        self._pool = self._bulk_pool = None

    @contextmanager
    def bulk_lane(self) -> Iterator[None]:
        """Inside this block (one task and what it awaits), transactions use the bulk pool."""
        token = _bulk.set(True)
        try:
            yield
        finally:
            _bulk.reset(token)

    def _lane_pool(self) -> asyncpg.Pool[asyncpg.Record]:
        if _bulk.get() and self._bulk_pool is not None:
            return self._bulk_pool
        return self.pool

    def _busy(self) -> DatabaseBusy:
        return DatabaseBusy(
            f"no database connection became free within {self._acquire_timeout:g} s"
        )

    @asynccontextmanager
    async def _connection(self, within: float | None = None) -> AsyncIterator[Connection]:
        """A pooled connection within ``within`` seconds (the acquire timeout when None), with
        driver failures translated."""
        pool = self._lane_pool()
        self.availability.check()
        try:
            conn = await pool.acquire(timeout=self._acquire_timeout if within is None else within)
        except TimeoutError:
            raise self._busy() from None
        except Exception as exc:
            if is_connection_error(exc):
                raise self.availability.connect_failed(exc) from exc
            raise
        try:
            yield conn
        except Exception as exc:
            if _lost(exc, conn):
                raise self.availability.connection_lost(exc) from exc
            raise
        finally:
            await _release(pool, conn)

    async def _probe(self) -> None:
        """Reconnect check: expire every pooled connection, then open one and ping."""
        for pool in (self._pool, self._bulk_pool):
            if pool is not None:
                await pool.expire_connections()
        async with self.pool.acquire(timeout=self._acquire_timeout) as conn:
            await _ping(conn)

    @asynccontextmanager
    async def tenant_tx(
        self,
        tenant_id: TenantId,
        *,
        snapshot: bool = False,
        cached_plans: bool = False,
        generic_plans: bool = False,
        serial: bool = False,
    ) -> AsyncIterator[Connection]:
        """One transaction confined to ``tenant_id`` by role and RLS setting.

        ``snapshot`` makes it a read-only REPEATABLE READ transaction: every
        statement sees the same snapshot (an export's header counts and the rows
        streamed after them agree even while other clients write).

        By default every statement is planned for its actual values (recall's needs
        that). ``cached_plans`` lets Postgres reuse a statement's generic plan instead,
        for transactions of short keyed statements (the store path, the pause check,
        the write-behind) whose plan does not depend on the values. ``generic_plans``
        makes every statement run its generic plan at once (the recall statement of a
        shape whose generic plan is as good as a custom one: the planning is saved).
        ``serial`` plans without parallel workers (recall's retrieval: index probes under
        LIMITs, where a Gather's workers cost more to start than they save and start even
        below a branch that is turned off at run time).
        """
        isolation: Literal["repeatable_read"] | None = "repeatable_read" if snapshot else None
        async with (
            self._tenant_connection(tenant_id) as conn,
            conn.transaction(isolation=isolation, readonly=snapshot),
        ):
            entering = self.entering(
                tenant_id, cached_plans=cached_plans, generic_plans=generic_plans, serial=serial
            )
            await conn.execute(*entering)
            yield conn

    @asynccontextmanager
    async def _tenant_connection(self, tenant_id: TenantId) -> AsyncIterator[Connection]:
        """A connection for ``tenant_id`` within its share of the main pool
        (:mod:`service.db.share`): the wait for a place and for the connection together
        take at most the acquire timeout. The bulk pool, two connections for streams
        paced by their clients, is left whole."""
        if _bulk.get() and self._bulk_pool is not None:
            async with self._connection() as conn:
                yield conn
            return
        self.availability.check()
        deadline = asyncio.get_running_loop().time() + self._acquire_timeout
        async with self.share.place(str(tenant_id), self._acquire_timeout, self._busy):
            left = max(0.0, deadline - asyncio.get_running_loop().time())
            async with self._connection(left) as conn:
                yield conn

    def entering(
        self,
        tenant_id: TenantId,
        *,
        cached_plans: bool = False,
        generic_plans: bool = False,
        serial: bool = False,
    ) -> tuple[str, ...]:
        """The statement and arguments that confine a transaction to ``tenant_id`` (the
        ``enter_tenant`` queries: role, RLS tenant, HNSW search, and the planner settings
        of per-call planning, of generic plans with ``generic_plans``, or none with
        ``cached_plans``; no parallel workers with ``serial``)."""
        if cached_plans:
            return _ENTER_CACHED, APP_ROLE, str(tenant_id), self._breadth
        plans = "force_generic_plan" if generic_plans else "force_custom_plan"
        workers = "0" if serial else ""
        return _ENTER, APP_ROLE, str(tenant_id), self._breadth, self._page_cost, plans, workers

    @asynccontextmanager
    async def admin_conn(self) -> AsyncIterator[Connection]:
        """A connection as the owner role without an explicit transaction: each
        statement commits on its own (single-statement control-plane reads)."""
        async with self._connection() as conn:
            yield conn

    @asynccontextmanager
    async def admin_tx(self) -> AsyncIterator[Connection]:
        """One transaction as the connecting (owner) role, for control-plane work."""
        async with self._connection() as conn, conn.transaction():
            yield conn

    async def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        async with self._connection() as conn:
            return await _ping(conn)


async def _ping(conn: Connection) -> bool:
    return bool(await conn.fetchval(sql.QUERIES["ping"]))


def _lost(exc: BaseException, conn: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]) -> bool:
    """Whether an error raised inside a transaction means its connection died.

    Any error on a connection that is now closed does (the rollback of a transaction
    whose server died raises asyncpg's InternalClientError, not a connection error),
    and so does a connection error anywhere in the chain. An ``OSError`` on an open
    connection does not: it may be the caller's own file.
    """
    try:
        if conn.is_closed():
            return True
    except asyncpg.InterfaceError:  # a closed connection detaches from its proxy
        return True
    chained: BaseException | None = exc
    for _ in range(8):  # a chain is short; a cycle must not loop forever
        if chained is None:
            break
        if is_connection_error(chained) and not isinstance(chained, OSError):
            return True
        chained = chained.__cause__ or chained.__context__
    return False


async def _release(
    pool: asyncpg.Pool[asyncpg.Record], conn: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]
) -> None:
    """Give a connection back; one that died with its server is simply dropped."""
    try:
        await pool.release(conn)
    except Exception as exc:
        if not is_connection_error(exc):
            raise
