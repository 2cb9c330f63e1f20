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
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal, TypeAlias

import asyncpg
from pgvector.asyncpg import register_vector

from service.config import DbPooler
from service.db import sql
from service.db.pooler import connect_options
from service.errors import DatabaseNotOpen, DatabaseUnavailable
from service.models import TenantId

Connection: TypeAlias = (
    "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
)
APP_ROLE = "cpersona_app"


async def _init_connection(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """Register codecs once per connection: jsonb as Python objects, vectors."""
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await register_vector(conn)


class _PooledConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query.

    Every setting the service makes is transaction-local (``set_config(..., true)``),
    so there is no session state to reset; skipping ``RESET ALL`` and friends saves a
    round trip on every release.
    """

    def get_reset_query(self) -> str:
        return ""


class Database:
    """Owns the pool; hands out tenant-scoped and admin transactions."""

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        command_timeout: float = 30.0,
        pooler: DbPooler = "none",
    ) -> None:
        self.dsn = dsn
        self.pooler = pooler
        self._min_size = min_size
        self._max_size = max_size
        self._command_timeout = command_timeout
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None

    @property
    def pool(self) -> asyncpg.Pool[asyncpg.Record]:
        if self._pool is None:
            raise DatabaseNotOpen()
        return self._pool

    async def open(self) -> Database:
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self._min_size,
                max_size=self._max_size,
                command_timeout=self._command_timeout,
                init=_init_connection,
                connection_class=_PooledConnection,
                **connect_options(self.pooler),
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise DatabaseUnavailable(f"cannot connect to the database: {exc}") from exc
        return self

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def tenant_tx(
        self, tenant_id: TenantId, *, snapshot: bool = False
    ) -> AsyncIterator[Connection]:
        """One transaction confined to ``tenant_id`` by role and RLS setting.

        ``snapshot`` makes it a read-only REPEATABLE READ transaction: every
        statement sees the same snapshot (an export's header counts and the rows
        streamed after them agree even while other clients write).
        """
        isolation: Literal["repeatable_read"] | None = "repeatable_read" if snapshot else None
        async with (
            self.pool.acquire() as conn,
            conn.transaction(isolation=isolation, readonly=snapshot),
        ):
            await conn.execute(sql.QUERIES["enter_tenant"], APP_ROLE, str(tenant_id))
            yield conn

    @asynccontextmanager
    async def admin_conn(self) -> AsyncIterator[Connection]:
        """A connection as the owner role without an explicit transaction: each
        statement commits on its own (single-statement control-plane reads)."""
        async with self.pool.acquire() as conn:
            yield conn

    @asynccontextmanager
    async def admin_tx(self) -> AsyncIterator[Connection]:
        """One transaction as the connecting (owner) role, for control-plane work."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    async def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        async with self.pool.acquire() as conn:
            return bool(await conn.fetchval(sql.QUERIES["ping"]))
