"""`cpersona-service checkup` as a subprocess against a real database (DATABASE_URL):
a readable report per tenant and the CI gate's exit codes (2 critical, 1 warn with
--strict, else 0)."""

from __future__ import annotations

import asyncio
import subprocess

from service.memory.library import Library
from tests.seeds import new_seed
from tests.support import run_cli

NO_EMBEDDINGS = {"CPERSONA_EMBEDDING_MODE": "none"}


async def checkup(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(run_cli, database_url, "checkup", *args, env=NO_EMBEDDINGS)


async def test_checkup_exit_codes_follow_the_worst_tenant(lib: Library, database_url: str) -> None:
    clean = await new_seed(lib, "clean")
    await clean.memory("a fine memory")
    messy = await new_seed(lib, "messy")
    blank = await messy.memory("   ")

    report = await checkup(database_url)
    assert report.returncode == 0, report.stderr
    assert "tenant clean: healthy" in report.stdout
    assert "tenant messy: degraded" in report.stdout
    assert "warn     empty_content: count=1 repairable=1" in report.stdout

    strict = await checkup(database_url, "--strict")
    assert strict.returncode == 1

    fixed = await checkup(database_url, "--fix", "--strict")
    assert fixed.returncode == 0, fixed.stdout
    assert "tenant messy: healthy" in fixed.stdout
    assert "repaired" in fixed.stdout
    assert await messy.memory_row(blank) is None

    async with lib.db.admin_tx() as conn:
        await conn.execute("UPDATE alembic_version SET version_num = '0002'")
    critical = await checkup(database_url, "--tenant", "clean")
    assert critical.returncode == 2
    assert "tenant clean: unhealthy" in critical.stdout
    assert "tenant messy" not in critical.stdout
    assert "critical migrations_at_head" in critical.stdout
    assert "hint: run `cpersona-service migrate`" in critical.stdout


async def test_an_unknown_tenant_fails_with_one_line(database_url: str) -> None:
    result = await checkup(database_url, "--tenant", "nope")
    assert result.returncode == 1
    assert result.stderr.strip() == "cpersona-service: no tenant 'nope'"
    assert result.stdout == ""
