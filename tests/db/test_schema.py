"""Schema guarantees: the shared id sequence, row-level security, role privileges."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from service.db.pool import Connection, Database
from service.models import TenantId


async def _tenant(conn: Connection, slug: str) -> TenantId:
    value = await conn.fetchval("INSERT INTO tenants (slug) VALUES ($1) RETURNING id", slug)
    return TenantId(uuid.UUID(str(value)))


async def _agent(conn: Connection, tenant: TenantId, name: str) -> int:
    sql = "INSERT INTO agents (tenant_id, name) VALUES ($1, $2) RETURNING id"
    return int(await conn.fetchval(sql, tenant, name))


async def test_memories_and_episodes_share_one_growing_id_sequence(db: Database) -> None:
    async with db.admin_tx() as conn:
        tenant = await _tenant(conn, "seq")
        agent = await _agent(conn, tenant, "a")
        ids = []
        insert_memory = "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, $3)"
        insert_episode = "INSERT INTO episodes (tenant_id, agent_id, summary) VALUES ($1, $2, $3)"
        for i in range(5):
            ids.append(await conn.fetchval(insert_memory + " RETURNING id", tenant, agent, f"m{i}"))
            ids.append(
                await conn.fetchval(insert_episode + " RETURNING id", tenant, agent, f"e{i}")
            )
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


async def test_rls_hides_other_tenants_rows_even_without_a_where_clause(db: Database) -> None:
    async with db.admin_tx() as conn:
        tenants = [await _tenant(conn, slug) for slug in ("rls-a", "rls-b")]
        for tenant in tenants:
            agent = await _agent(conn, tenant, "same-name")
            await conn.execute(
                "INSERT INTO memories (tenant_id, agent_id, content) VALUES ($1, $2, $3)",
                tenant,
                agent,
                f"secret of {tenant}",
            )
    async with db.tenant_tx(tenants[0]) as conn:
        rows = await conn.fetch("SELECT tenant_id, content FROM memories")
        agents = await conn.fetch("SELECT tenant_id FROM agents")
    assert [row["tenant_id"] for row in rows] == [tenants[0]]
    assert [row["tenant_id"] for row in agents] == [tenants[0]]


async def test_rls_refuses_writing_rows_of_another_tenant(db: Database) -> None:
    async with db.admin_tx() as conn:
        mine, theirs = [await _tenant(conn, slug) for slug in ("w-a", "w-b")]
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with db.tenant_tx(mine) as conn:
            await conn.execute("INSERT INTO agents (tenant_id, name) VALUES ($1, 'x')", theirs)


async def test_without_a_tenant_setting_the_app_role_sees_nothing(db: Database) -> None:
    async with db.admin_tx() as conn:
        tenant = await _tenant(conn, "unset")
        await _agent(conn, tenant, "a")
        await conn.execute("SET LOCAL ROLE cpersona_app")
        assert await conn.fetchval("SELECT count(*) FROM agents") == 0


async def test_app_role_cannot_bypass_rls_nor_read_key_hashes(db: Database) -> None:
    async with db.admin_tx() as conn:
        role = await conn.fetchrow(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'cpersona_app'"
        )
        assert role is not None
        assert not role["rolsuper"]
        assert not role["rolbypassrls"]
    async with db.admin_tx() as conn:
        tenant = await _tenant(conn, "keys")
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with db.tenant_tx(tenant) as conn:
            await conn.fetch("SELECT key_hash FROM api_keys")


async def test_every_tenant_table_forces_row_level_security(db: Database) -> None:
    async with db.admin_tx() as conn:
        rows = await conn.fetch(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c "
            "JOIN information_schema.columns col ON col.table_name = c.relname "
            "AND col.column_name = 'tenant_id' AND col.table_schema = 'public' "
            "WHERE c.relkind = 'r' AND c.relname <> 'api_keys'"
        )
    assert {row["relname"] for row in rows} >= {"agents", "memories", "episodes", "profiles"}
    assert all(row["relrowsecurity"] for row in rows)
    # read across tenants by the owner role: the queue worker drains the jobs; a presented
    # OAuth code or token, or a console session, is resolved by its hash before its
    # tenant is known
    owner_reads_across_tenants = {
        "embedding_jobs",
        "oauth_codes",
        "oauth_tokens",
        "console_sessions",
    }
    unforced = {row["relname"] for row in rows if not row["relforcerowsecurity"]}
    assert unforced <= owner_reads_across_tenants


async def test_every_table_and_its_non_obvious_columns_are_commented(db: Database) -> None:
    async with db.admin_tx() as conn:
        missing = await conn.fetch(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'alembic_version' "
            "AND obj_description(c.oid, 'pg_class') IS NULL"
        )
    assert [row["relname"] for row in missing] == []
