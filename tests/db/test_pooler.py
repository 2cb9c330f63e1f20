"""PgBouncer 1.18 in transaction mode in front of the service's pool (CPERSONA_DB_POOLER).

A PgBouncer of this module's own keeps two server connections per database, so the
pool's six client connections must share them, as they do behind any busy pooler.
Without the setting asyncpg's named prepared statements collide on the shared server
connections; with it the same concurrent store/list/recall work completes, all of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from service.config import DbPooler, Settings
from service.db.pool import Database
from service.memory import tenants
from service.memory.library import Library
from service.memory.memories import listing, store
from service.memory.recall import pipeline
from service.models import TenantId
from tests.servers import installed_or_skip
from tests.servers.postgres import database_of
from tests.servers.proxies import PgBouncer, pgbouncer

CLIENTS = 6
ROUNDS = 8
PREPARED_STATEMENT_ERRORS = (
    asyncpg.InvalidSQLStatementNameError,  # "prepared statement __asyncpg_stmt_N__ does not exist"
    asyncpg.DuplicatePreparedStatementError,  # "... already exists" (another client's)
)


@pytest.fixture(scope="module")
def narrow_bouncer(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgBouncer]:
    installed_or_skip("pgbouncer")
    with pgbouncer(admin_url, Path(tmp_path_factory.mktemp("bouncer")), pool_size=2) as running:
        yield running


async def _client(lib: Library, tenant: TenantId, client: int, run: str) -> None:
    for n in range(ROUNDS):
        message = {"content": f"{run}: client {client} fact {n} about pooled connections"}
        body = await store.store(lib, tenant, store.StoreRequest(f"agent-{client}", message))
        assert isinstance(body, store.Stored), body
        listed = await listing.list_memories(
            lib, tenant, agent_id=f"agent-{client}", project_id=None, limit=5
        )
        assert listed.rows
        await pipeline.recall(lib, tenant, pipeline.RecallRequest(f"agent-{client}", "pooled"))


async def _run(url: str, settings: Settings, tenant: TenantId, pooler: DbPooler) -> list[object]:
    """Each client's outcome (None: all its work done), or the one error of opening."""
    db = Database(url, min_size=CLIENTS, max_size=CLIENTS, pooler=pooler)
    try:
        await db.open()  # opening already introspects types with prepared statements
        lib = Library(db, settings)
        jobs = (_client(lib, tenant, client, pooler) for client in range(CLIENTS))
        return list(await asyncio.gather(*jobs, return_exceptions=True))
    except Exception as exc:
        return [exc]
    finally:
        await db.close()


def _prepared_statement_error(result: object) -> bool:
    chain = [result, getattr(result, "__cause__", None)]
    return any(isinstance(link, PREPARED_STATEMENT_ERRORS) for link in chain)


async def test_asyncpg_needs_the_pooler_setting_behind_pgbouncer_in_transaction_mode(
    narrow_bouncer: PgBouncer, direct_database_url: str, settings: Settings, db: Database
) -> None:
    url = narrow_bouncer.url(database_of(direct_database_url))
    tenant = TenantId((await tenants.create_tenant(db, "acme")).id)

    unsafe = await _run(url, settings, tenant, "none")
    assert any(_prepared_statement_error(result) for result in unsafe), unsafe

    safe = await _run(url, settings, tenant, "pgbouncer")
    assert safe == [None] * CLIENTS
    async with db.tenant_tx(tenant) as conn:
        stored = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE tenant_id = $1 AND content LIKE 'pgbouncer:%'",
            tenant,
        )
    assert stored == CLIENTS * ROUNDS
