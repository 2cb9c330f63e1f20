"""``cpersona-service export`` / ``import`` as subprocesses against a real database."""

from __future__ import annotations

import json
from pathlib import Path

from service.memory import tenants
from service.memory.library import Library
from service.memory.memories import store
from service.models import TenantId
from tests.support import run_cli


async def _seeded(lib: Library) -> None:
    row = await tenants.create_tenant(lib.db, "cli")
    await tenants.create_tenant(lib.db, "other")
    for i in range(3):
        request = store.StoreRequest("a", {"id": f"m{i}", "content": f"fact {i}"})
        await store.store(lib, TenantId(row.id), request)


async def test_export_to_a_file_and_stdout_then_import_twice(
    lib: Library, database_url: str, tmp_path: Path
) -> None:
    await _seeded(lib)
    target = tmp_path / "out" / "cli.jsonl"
    env = {"CPERSONA_EMBEDDING_MODE": "none", "CPERSONA_DATA_DIR": str(tmp_path / "data")}
    done = run_cli(database_url, "export", "--tenant", "cli", "--output", str(target), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"exported 3 memories, 0 episodes and 0 profiles to {target}")
    piped = run_cli(database_url, "export", "--tenant", "cli", "--agent", "a", env=env)
    assert piped.returncode == 0
    header, *rows = [json.loads(line) for line in piped.stdout.splitlines()]
    assert header["memory_count"] == len(rows) == 3
    assert "\r" not in piped.stderr  # no progress bar when not on a terminal
    assert [json.loads(line) for line in target.read_text().splitlines()][1:] == rows
    args = ("import", "--tenant", "other", str(target), "--target-agent", "b")
    dry = run_cli(database_url, *args, "--dry-run", env=env)
    real = run_cli(database_url, *args, env=env)
    again = run_cli(database_url, *args, env=env)
    assert json.loads(dry.stdout) == {**json.loads(real.stdout), "dry_run": True}
    assert json.loads(real.stdout)["imported_memories"] == 3
    assert json.loads(again.stdout)["skipped_memories"] == 3


async def test_failures_exit_non_zero_with_one_line(
    lib: Library, database_url: str, tmp_path: Path
) -> None:
    await _seeded(lib)
    env = {"CPERSONA_EMBEDDING_MODE": "none"}
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"_type": "header", "memory_count": 2}\n')
    for args in (
        ("export", "--tenant", "nobody"),
        ("import", "--tenant", "cli", str(tmp_path / "missing.jsonl")),
        ("import", "--tenant", "cli", str(cut)),
    ):
        result = run_cli(database_url, *args, env=env)
        assert result.returncode == 1, args
        assert result.stderr.strip().count("\n") == 0, result.stderr
        assert result.stderr.startswith("cpersona-service: ")
    assert (
        "import aborted and rolled back"
        in run_cli(database_url, "import", "--tenant", "cli", str(cut), env=env).stderr
    )
