"""The command line, run as a subprocess against a real database."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from service import __version__
from service.cli.main import build_parser
from tests.servers import pooling
from tests.support import run_cli

KEY_PATTERN = r"^cpk_[0-9a-f]{12}_[A-Za-z0-9_-]+$"


def test_tenant_and_key_lifecycle(database_url: str) -> None:
    assert run_cli(database_url, "tenant", "create", "acme", "--name", "Acme").returncode == 0
    created = run_cli(
        database_url,
        "key",
        "create",
        "--tenant",
        "acme",
        "--label",
        "ci",
        "--grant",
        "alpha=read",
        "--expires-in",
        "30",
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert created.stdout == key + "\n"
    import re

    assert re.match(KEY_PATTERN, key)
    listed = run_cli(database_url, "key", "list", "--tenant", "acme")
    assert key[:16] in listed.stdout
    assert key not in listed.stdout
    assert "alpha=read" in listed.stdout
    tenants = run_cli(database_url, "tenant", "list")
    assert "acme" in tenants.stdout
    revoked = run_cli(database_url, "key", "revoke", key[:16])
    assert revoked.returncode == 0
    assert "revoked" in run_cli(database_url, "key", "list", "--tenant", "acme").stdout


def test_errors_exit_non_zero_with_one_line(database_url: str) -> None:
    duplicate = [run_cli(database_url, "tenant", "create", "dup") for _ in range(2)][1]
    assert duplicate.returncode == 1
    assert duplicate.stderr.strip().count("\n") == 0
    assert "already exists" in duplicate.stderr
    missing = run_cli(database_url, "key", "create", "--tenant", "nope")
    assert missing.returncode == 1
    assert "no tenant" in missing.stderr
    bad_grant = run_cli(database_url, "key", "create", "--tenant", "dup", "--grant", "a=write")
    assert bad_grant.returncode == 1


def test_bad_setting_stops_with_a_message_naming_it(database_url: str) -> None:
    result = run_cli(database_url, "tenant", "list", env={"CPERSONA_RECALL_PREVIEW_CHARS": "-5"})
    assert result.returncode == 1
    assert "CPERSONA_RECALL_PREVIEW_CHARS" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_db_url_prints_the_configured_url(database_url: str) -> None:
    result = run_cli(database_url, "db", "url")
    assert result.stdout.strip() == pooling.direct_url(database_url)  # past a pooler


def test_migrate_and_db_url_go_to_the_migration_url_and_the_rest_to_database_url(
    direct_database_url: str,
) -> None:
    unreachable = "postgresql://nobody@127.0.0.1:1/nowhere"
    direct = {"CPERSONA_MIGRATION_DATABASE_URL": direct_database_url}
    migrated = run_cli(unreachable, "migrate", env=direct)
    assert migrated.returncode == 0, migrated.stderr
    assert run_cli(unreachable, "db", "url", env=direct).stdout.strip() == direct_database_url
    listed = run_cli(unreachable, "tenant", "list", env=direct)
    assert listed.returncode == 1
    assert "cannot connect" in listed.stderr


def test_migrate_reports_head(database_url: str) -> None:
    result = run_cli(database_url, "migrate")
    assert result.returncode == 0
    from service.db.migrate import head_revision

    assert head_revision() in result.stdout


def test_serve_refuses_to_start_without_any_key(database_url: str) -> None:
    result = run_cli(database_url, "serve", "--port", "1")
    assert result.returncode == 1
    assert "no API key exists" in result.stderr


def test_key_expiry_is_validated_in_one_line(database_url: str) -> None:
    """Issue 10 (11): ``--expires-in 1e9`` (or ``inf``) printed a traceback."""
    assert run_cli(database_url, "tenant", "create", "acme").returncode == 0
    for bad in ("1e9", "inf", "nan", "-5", "soon"):
        result = run_cli(database_url, "key", "create", "--tenant", "acme", "--expires-in", bad)
        assert result.returncode == 1, (bad, result.stderr)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert "--expires-in: expected a number of days" in result.stderr
    longest = run_cli(database_url, "key", "create", "--tenant", "acme", "--expires-in", "36500")
    assert longest.returncode == 0, longest.stderr


def test_key_list_shows_an_expired_key_as_expired(database_url: str) -> None:
    """Issue 10 (11): an expired key was listed as ``active``."""
    assert run_cli(database_url, "tenant", "create", "acme").returncode == 0
    brief = run_cli(
        database_url, "key", "create", "--tenant", "acme", "--label", "brief", "--expires-in",
        "0.00001",  # under a second
    )  # fmt: skip
    lasting = run_cli(database_url, "key", "create", "--tenant", "acme", "--label", "lasting")
    assert brief.returncode == lasting.returncode == 0
    deadline = time.monotonic() + 20
    while True:
        states = {
            line.split()[3]: line.split()[1]  # KEY_ID STATE TOOLS LABEL ...
            for line in run_cli(
                database_url, "key", "list", "--tenant", "acme"
            ).stdout.splitlines()[1:]
        }
        if states.get("brief") == "expired" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert states == {"brief": "expired", "lasting": "active"}


def test_key_create_takes_a_tool_set_that_key_list_shows(database_url: str) -> None:
    assert run_cli(database_url, "tenant", "create", "sets").returncode == 0
    everyday = run_cli(database_url, "key", "create", "--tenant", "sets", "--tools", "everyday")
    default = run_cli(database_url, "key", "create", "--tenant", "sets")
    assert everyday.returncode == default.returncode == 0, everyday.stderr
    listed = run_cli(database_url, "key", "list", "--tenant", "sets").stdout.splitlines()
    assert listed[0].split()[:3] == ["KEY_ID", "STATE", "TOOLS"]
    tool_sets = {line.split()[0]: line.split()[2] for line in listed[1:]}
    assert tool_sets == {
        everyday.stdout.strip()[:16]: "everyday",
        default.stdout.strip()[:16]: "all",
    }


def test_an_unknown_tool_set_is_refused_in_one_line(database_url: str) -> None:
    assert run_cli(database_url, "tenant", "create", "sets").returncode == 0
    bad = run_cli(database_url, "key", "create", "--tenant", "sets", "--tools", "admin")
    assert bad.returncode == 1
    assert bad.stderr.strip().count("\n") == 0
    assert "--tools" in bad.stderr
    assert "everyday" in bad.stderr
    assert "sets" not in run_cli(database_url, "key", "list", "--tenant", "sets").stdout.split()


def test_a_malformed_database_url_is_one_line_naming_it_without_the_password() -> None:
    for url in ("notaurl", "postgresql://u:hunter2@db:54x2/app", "postgres://[::1/app"):
        done = run_cli(url, "tenant", "list")
        assert done.returncode == 1, url
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert done.stderr.startswith("cpersona-service: DATABASE_URL: expected postgresql://")
        assert "hunter2" not in done.stderr
        assert "Traceback" not in done.stderr


def test_an_unusable_data_dir_is_one_line_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = run_cli(None, "tenant", "list", env={"CPERSONA_DATA_DIR": str(blocker / "data")})
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert done.stderr.startswith("cpersona-service: CPERSONA_DATA_DIR: cannot use ")


def test_version_prints_the_release() -> None:
    done = run_cli(None, "--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"cpersona-service {__version__}"


def test_every_option_is_described_and_every_help_points_to_the_settings_table() -> None:
    def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, Any]]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    assert "Configuration table in README.md" in (sub.epilog or "")
                    yield from walk(sub, f"{path} {name}")
            else:
                yield path, action

    undescribed = [
        (path, action.dest) for path, action in walk(build_parser(), "") if not action.help
    ]
    assert undescribed == []
    serve_help = run_cli(None, "serve", "--help").stdout
    assert "--host" in serve_help
    assert "--port" in serve_help
    assert "Configuration table in README.md" in serve_help
    assert "design" not in run_cli(None, "--help").stdout
