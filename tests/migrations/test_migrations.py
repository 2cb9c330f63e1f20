"""Migrations run up, down and up again, and the head is what readiness expects."""

from __future__ import annotations

import asyncpg

from service.db import migrate


async def _tables(url: str) -> set[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    finally:
        await conn.close()
    return {row["tablename"] for row in rows}


async def test_upgrade_downgrade_upgrade_round_trips(database_url: str) -> None:
    expected = {"tenants", "api_keys", "agents", "memories", "episodes", "profiles"}
    assert expected <= await _tables(database_url)
    migrate.downgrade(database_url, "base")
    assert await _tables(database_url) == {"alembic_version"}
    migrate.upgrade(database_url)
    assert expected <= await _tables(database_url)


def test_head_revision_is_the_latest_script() -> None:
    assert migrate.head_revision() == "0005"
