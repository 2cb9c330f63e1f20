"""Migration 0011: a non-superuser owner with CREATEROLE can switch to cpersona_app on
Postgres 16+ (deploy-report item 2).

On Postgres 16+ the role that creates ``cpersona_app`` holds it WITH ADMIN OPTION only
(no SET, no INHERIT). The test gives a fresh CREATEDB/CREATEROLE login role exactly
that membership (the test server's ``cpersona_app`` already exists, so the role cannot
create it itself), lets it own a new database whose untrusted extension a superuser
created (``vector``, as a managed Postgres does), and migrates as that owner: through
the revision before 0011 the tenant transaction is refused, at head it works.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from service.db import migrate
from service.db.pool import Database
from service.models import TenantId
from tests.servers.postgres import admin_execute, with_database

FIX = "0011"


def _before_the_fix() -> str:
    """The revision 0011 follows (whatever the chain is after rechaining)."""
    scripts = ScriptDirectory.from_config(migrate.alembic_config("unused"))
    down = scripts.get_revision(FIX).down_revision
    assert isinstance(down, str)
    return down


@pytest.fixture
async def owner_url(admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A database owned by a non-superuser CREATEROLE owner (ADMIN-only on cpersona_app);
    the migrated template made sure the service's roles exist."""
    owner, name = f"cpt_owner_{uuid.uuid4().hex[:8]}", f"cpt_owned_{uuid.uuid4().hex[:8]}"
    version = await _server_version(admin_url)
    if version < 160000:
        pytest.skip("the SET privilege on a role exists from Postgres 16 on")
    await admin_execute(
        admin_url,
        f"CREATE ROLE {owner} LOGIN CREATEDB CREATEROLE",
        f"GRANT cpersona_app TO {owner} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE",
        f"GRANT cpersona_ops TO {owner} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE",
        f'CREATE DATABASE "{name}" OWNER {owner}',
    )
    await admin_execute(with_database(admin_url, name), "CREATE EXTENSION vector")
    try:
        yield _as_user(with_database(admin_url, name), owner)
    finally:
        await admin_execute(
            admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f"DROP ROLE {owner}"
        )


async def _server_version(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SHOW server_version_num"))
    finally:
        await conn.close()


def _as_user(url: str, user: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{user}@{rest.split('@', 1)[1]}"


async def _enter_tenant(url: str) -> None:
    db = await Database(url, min_size=1, max_size=1).open()
    try:
        async with db.tenant_tx(TenantId(uuid.uuid4())) as conn:
            assert await conn.fetchval("SELECT current_user") == "cpersona_app"
    finally:
        await db.close()


async def test_the_owner_can_switch_to_the_app_role_once_0011_granted_set(
    owner_url: str,
) -> None:
    migrate.upgrade(owner_url, _before_the_fix())
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="set role"):
        await _enter_tenant(owner_url)

    migrate.upgrade(owner_url)
    await _enter_tenant(owner_url)
    conn = await asyncpg.connect(owner_url)
    try:
        assert await conn.fetchval("SELECT ensure_app_role_membership()") == "member"
        assert await conn.fetchval("SELECT pg_has_role(current_user, 'cpersona_app', 'SET')")
    finally:
        await conn.close()
