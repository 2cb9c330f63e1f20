"""The ops schema and the read-only ops role (migration 0004), and the comment
coverage that makes psql a usable operations interface (docs/psql.md, "Inspecting with psql")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from service.db.pool import Connection, Database
from service.memory.library import Library
from tests.seeds import new_seed
from tests.support import new_tenant

VIEWS = (
    "agents",
    "embedding_backlog",
    "export_files",
    "largest_rows",
    "paused_scopes",
    "tenants",
    "usage_daily",
)
SECRET_OR_CONTENT = frozenset(
    {
        "key_hash",
        "prefix",
        "grants",
        "content",
        "summary",
        "keywords",
        "metadata",
        "source",
        "embedding",
        "document",
    }
)
SELF_EXPLANATORY = frozenset(
    {
        "id",
        "tenant_id",
        "tenant_slug",
        "slug",
        "name",
        "created_at",
        "updated_at",
        "expires_at",
        "version_num",
        "calls",
        "tool",
        "memories",
        "episodes",
        "locked_memories",
    }
)


@pytest.fixture
async def rolled_back(db: Database) -> AsyncIterator[Connection]:
    """An owner connection whose work (roles included) is rolled back at the end."""
    async with db.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        try:
            yield conn
        finally:
            await transaction.rollback()


async def _two_tenants(lib: Library) -> None:
    for slug in ("ops-a", "ops-b"):
        seed = await new_seed(lib, slug)
        await seed.memory(f"memory of {slug}")
    await new_tenant(lib, "ops-c")


async def test_the_ops_role_reads_the_views_of_every_tenant_and_no_table(
    lib: Library, rolled_back: Connection
) -> None:
    await _two_tenants(lib)
    await rolled_back.execute("SET LOCAL ROLE cpersona_ops")
    agents = await rolled_back.fetch("SELECT tenant_slug, memories FROM ops.agents ORDER BY 1")
    assert [(r["tenant_slug"], r["memories"]) for r in agents] == [("ops-a", 1), ("ops-b", 1)]
    tenants = await rolled_back.fetch("SELECT slug, active_keys FROM ops.tenants ORDER BY 1")
    assert [(r["slug"], r["active_keys"]) for r in tenants] == [
        ("ops-a", 0),
        ("ops-b", 0),
        ("ops-c", 1),
    ]
    for view in VIEWS:
        await rolled_back.fetch(f"SELECT * FROM ops.{view} LIMIT 1")  # noqa: S608
    for table in ("memories", "api_keys", "tenants", "embedding_jobs"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with rolled_back.transaction():  # a savepoint: the refusal rolls back alone
                await rolled_back.fetch(f"SELECT 1 FROM {table} LIMIT 1")  # noqa: S608


async def test_the_ops_role_may_select_exactly_the_views(db: Database) -> None:
    async with db.admin_tx() as conn:
        readable = await conn.fetch(
            "SELECT n.nspname || '.' || c.relname AS name FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%' AND c.relkind IN ('r', 'v', 'm', 'p', 'S') "
            "AND (has_table_privilege('cpersona_ops', c.oid, 'SELECT') "
            "     OR has_table_privilege('cpersona_ops', c.oid, 'INSERT,UPDATE,DELETE')) "
            "ORDER BY 1"
        )
        key_hash = await conn.fetchval(
            "SELECT has_column_privilege('cpersona_ops', 'api_keys', 'key_hash', 'SELECT')"
        )
        role = await conn.fetchrow(
            "SELECT rolcanlogin, rolsuper, rolbypassrls FROM pg_roles "
            "WHERE rolname = 'cpersona_ops'"
        )
    assert [r["name"] for r in readable] == [f"ops.{view}" for view in VIEWS]
    assert key_hash is False
    assert role is not None
    assert (role["rolcanlogin"], role["rolsuper"], role["rolbypassrls"]) == (False, False, False)


async def test_views_run_as_their_owner_and_show_no_secret_or_content(db: Database) -> None:
    async with db.admin_tx() as conn:
        options = await conn.fetch(
            "SELECT c.relname, c.reloptions FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'ops' AND c.relkind = 'v' ORDER BY 1"
        )
        columns = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'ops'"
        )
    assert [r["relname"] for r in options] == list(VIEWS)
    assert all(r["reloptions"] == ["security_invoker=false"] for r in options)
    assert {r["column_name"] for r in columns} & SECRET_OR_CONTENT == set()


async def test_a_non_superuser_view_owner_still_serves_every_tenant_to_ops(
    lib: Library, rolled_back: Connection
) -> None:
    """Managed Postgres: the migration role is no superuser, so tenant RLS applies to
    the views' owner; the ops_read policies admit rows for cpersona_ops holders only."""
    await _two_tenants(lib)
    suffix = uuid.uuid4().hex[:10]
    owner, login = f"ops_owner_{suffix}", f"ops_login_{suffix}"
    await rolled_back.execute(f"CREATE ROLE {owner} NOLOGIN NOSUPERUSER NOBYPASSRLS")
    await rolled_back.execute(f"CREATE ROLE {login} NOLOGIN IN ROLE cpersona_ops")
    await rolled_back.execute(f"GRANT SELECT ON tenants, agents, memories, episodes TO {owner}")
    await rolled_back.execute(f"GRANT USAGE ON SCHEMA ops TO {owner}")
    await rolled_back.execute(f"ALTER VIEW ops.agents OWNER TO {owner}")
    await rolled_back.execute(f"SET LOCAL ROLE {login}")
    seen = await rolled_back.fetch("SELECT tenant_slug, memories FROM ops.agents ORDER BY 1")
    assert [(r["tenant_slug"], r["memories"]) for r in seen] == [("ops-a", 1), ("ops-b", 1)]
    await rolled_back.execute(f"SET LOCAL ROLE {owner}")
    assert await rolled_back.fetchval("SELECT count(*) FROM ops.agents") == 0
    assert await rolled_back.fetchval("SELECT count(*) FROM memories") == 0
    await rolled_back.execute("RESET ROLE")
    await rolled_back.execute("DROP POLICY ops_read ON agents")
    await rolled_back.execute(f"SET LOCAL ROLE {login}")
    assert await rolled_back.fetchval("SELECT count(*) FROM ops.agents") == 0  # the policy did it


async def test_every_table_view_and_non_obvious_column_has_a_comment(db: Database) -> None:
    async with db.admin_tx() as conn:
        relations = await conn.fetch(
            "SELECT n.nspname || '.' || c.relname AS name FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname IN ('public', 'ops') AND c.relkind IN ('r', 'v', 'p') "
            "AND c.relname <> 'alembic_version' AND obj_description(c.oid, 'pg_class') IS NULL"
        )
        columns = await conn.fetch(
            "SELECT n.nspname || '.' || c.relname || '.' || a.attname AS name, a.attname "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
            "WHERE n.nspname IN ('public', 'ops') AND c.relkind IN ('r', 'v', 'p') "
            "AND c.relname <> 'alembic_version' AND col_description(c.oid, a.attnum) IS NULL"
        )
        schema = await conn.fetchval("SELECT obj_description('ops'::regnamespace, 'pg_namespace')")
    assert [r["name"] for r in relations] == []
    assert [r["name"] for r in columns if r["attname"] not in SELF_EXPLANATORY] == []
    assert schema
