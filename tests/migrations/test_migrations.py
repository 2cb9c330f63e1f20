"""Migrations: head builds the catalogue the code expects, and every step reverses.

The catalogue (``catalogue.py``) is compared with ``schema.json``, the schema the
service's SQL is written against; every named query also prepares against it
(``tests/db/test_sql_registry.py``). Nothing here names the head revision: the steps
come from the migration scripts themselves.
"""

from __future__ import annotations

import os

from alembic.script import ScriptDirectory

from service.db import migrate
from tests.migrations.catalogue import catalogue, differences, load_snapshot, write_snapshot

REWRITE = "CPERSONA_WRITE_SCHEMA_SNAPSHOT"


def revisions() -> list[str]:
    """Every revision from the first to the head, in upgrade order."""
    scripts = ScriptDirectory.from_config(migrate.alembic_config("unused"))
    return [script.revision for script in reversed(list(scripts.walk_revisions()))]


async def test_the_migrated_schema_is_the_catalogue_the_code_expects(
    direct_database_url: str,
) -> None:
    actual = await catalogue(direct_database_url)
    if os.environ.get(REWRITE) == "1":
        write_snapshot(actual)
    diff = differences(load_snapshot(), actual)
    hint = f"\nIf the change is intended: {REWRITE}=1 scripts/test tests/migrations"
    assert not diff, "\n".join(diff) + hint


async def test_every_downgrade_restores_the_catalogue_before_its_upgrade(
    direct_database_url: str,
) -> None:
    steps = revisions()
    assert migrate.head_revision() == steps[-1]
    migrate.downgrade(direct_database_url, "base")
    before = {"base": await catalogue(direct_database_url)}
    previous = "base"
    for revision in steps:
        migrate.upgrade(direct_database_url, revision)
        before[revision] = await catalogue(direct_database_url)
        assert before[revision] != before[previous], f"{revision} changed nothing"
        previous = revision
    for revision, down_to in zip(reversed(steps), reversed(["base", *steps[:-1]]), strict=True):
        migrate.downgrade(direct_database_url, down_to)
        diff = differences(before[down_to], await catalogue(direct_database_url))
        assert not diff, f"downgrade of {revision}:\n" + "\n".join(diff)
    migrate.upgrade(direct_database_url)
    assert not differences(before[steps[-1]], await catalogue(direct_database_url))
