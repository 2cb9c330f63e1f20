"""``migrate`` under an advisory lock, and a database ahead of the code left alone.

Two ``migrate`` processes started together on one empty database (two release
jobs, two hosts) both succeed: the second waits for the first's lock and then
finds nothing to do. A database a newer release migrated is not touched by this code's scripts.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from service.db import migrate
from tests.servers.postgres import admin_execute, with_database
from tests.support import run_cli


@pytest.fixture
async def empty_url(admin_url: str) -> AsyncIterator[str]:
    name = f"cpt_empty_{uuid.uuid4().hex[:12]}"
    await admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    try:
        yield with_database(admin_url, name)
    finally:
        await admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _revision(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return str(await conn.fetchval("SELECT version_num FROM alembic_version"))
    finally:
        await conn.close()


async def test_two_concurrent_migrate_commands_of_one_database_both_succeed(
    empty_url: str,
) -> None:
    runs = [asyncio.to_thread(run_cli, empty_url, "migrate", timeout=120) for _ in range(2)]
    results = await asyncio.gather(*runs)
    assert [result.returncode for result in results] == [0, 0], [r.stderr for r in results]
    assert await _revision(empty_url) == migrate.head_revision()


async def test_a_database_ahead_of_the_code_is_left_as_it_is(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE alembic_version SET version_num = '9999_a_newer_release'")
    finally:
        await conn.close()
    await asyncio.to_thread(migrate.upgrade, database_url)
    assert await _revision(database_url) == "9999_a_newer_release"
