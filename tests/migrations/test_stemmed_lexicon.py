"""Migration 0007 on a database that already holds memories: the stemmed vector is
backfilled in batches (resumably), its index is built, and every agent's BM25 statistics
are counted, so recall finds other word forms of rows written before the upgrade."""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import asyncpg
from sqlalchemy import create_engine, text

from service.db import migrate
from tests.db.test_lexicon import CURRENT, RECOUNT

SCRIPT = migrate.MIGRATIONS_DIR / "versions" / "0007_stemmed_lexicon.py"
ROWS = 240


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("migration_0007", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _populate(url: str) -> list[tuple[str, int]]:
    """Two agents of one tenant with rows, written by the code of revision 0006."""
    conn = await asyncpg.connect(url)
    try:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('old') RETURNING id")
        agents = []
        for name in ("a", "b"):
            agent = await conn.fetchval(
                "INSERT INTO agents (tenant_id, name) VALUES ($1, $2) RETURNING id", tenant, name
            )
            await conn.execute(
                "INSERT INTO memories (tenant_id, agent_id, content) "
                "SELECT $1, $2, 'Grace prefers COBOL, note ' || g || ' of agent ' || $3 "
                "FROM generate_series(1, $4::int) g",
                tenant,
                agent,
                name,
                ROWS // 2,
            )
            agents.append((str(tenant), int(agent)))
        return agents
    finally:
        await conn.close()


async def _counts(url: str, tenant: str, agent: int, query: str) -> dict[str, tuple[int, int]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(query, tenant, agent)
    finally:
        await conn.close()
    return {r["key"]: (int(r["df"]), int(r["len"])) for r in rows}


async def _assert_migrated(url: str, agents: list[tuple[str, int]]) -> None:
    conn = await asyncpg.connect(url)
    try:
        missing = await conn.fetchval("SELECT count(*) FROM memories WHERE content_tsv_en IS NULL")
        valid = await conn.fetchval(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = 'memories_tsv_en'"
        )
        stemmed = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE content_tsv_en @@ 'prefer'::tsquery"
        )
    finally:
        await conn.close()
    assert (missing, valid, stemmed) == (0, True, ROWS)
    for tenant, agent in agents:
        counted = await _counts(url, tenant, agent, RECOUNT)
        assert await _counts(url, tenant, agent, CURRENT) == counted
        assert counted["english:prefer"][0] == counted["simple:"][0] == ROWS // 2


async def test_upgrading_a_populated_database_backfills_and_counts_everything(
    database_url: str,
) -> None:
    migrate.downgrade(database_url, "0006")
    agents = await _populate(database_url)
    migrate.upgrade(database_url)
    await _assert_migrated(database_url, agents)


async def test_an_interrupted_backfill_resumes_where_it_stopped(database_url: str) -> None:
    """The first run stopped after its catalogue step and one batch (each batch commits
    alone); running the migration again finishes the job, counting every row once."""
    script = _script()
    migrate.downgrade(database_url, "0006")
    agents = await _populate(database_url)
    engine = create_engine(re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", database_url))
    try:
        with engine.connect() as conn:
            with conn.begin():
                conn.execute(text(script.CATALOGUE))
            auto = conn.execution_options(isolation_level="AUTOCOMMIT")
            first = auto.execute(text(script.BACKFILL), {"after": 0, "batch": 50}).one()
            assert first[0] == 50
            left = auto.execute(
                text("SELECT count(*) FROM memories WHERE content_tsv_en IS NULL")
            ).scalar()
            assert left == ROWS - 50
    finally:
        engine.dispose()
    migrate.upgrade(database_url)
    await _assert_migrated(database_url, agents)
