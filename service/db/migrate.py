"""Schema migrations through Alembic (plain SQL revisions, ``service.db.migrations``).

Alembic's environment is synchronous (psycopg), so async callers run these in a
worker thread. The head revision is read from the scripts, which lets
``/readyz`` tell whether the database is migrated.

A database may be *ahead* of this code: during a rolling deploy the new release
migrates while the old one still serves. Migrations are additive (expand first,
contract in a later release), so old code keeps working on a newer schema and
:func:`revision_state` counts a revision these scripts do not know as ``ahead``,
which ``/readyz``, ``serve`` and ``worker`` accept.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal, TypeAlias

import asyncpg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError

from service.db import sql
from service.db.pool import Database

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
"""The Alembic scripts, shipped inside the package as ``service/db/migrations``: in a
checkout that is a symlink to the top-level ``alembic/`` folder, in a wheel a copy."""


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = database_url
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (blocking)."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    """Revert migrations down to ``revision`` (blocking)."""
    command.downgrade(alembic_config(database_url), revision)


def head_revision() -> str:
    head = _scripts().get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


@functools.cache
def _scripts() -> ScriptDirectory:
    """The migration scripts (read once: they do not change while the process runs)."""
    return ScriptDirectory.from_config(alembic_config("unused"))


RevisionState: TypeAlias = Literal["unmigrated", "behind", "head", "ahead"]


def revision_state(revision: str | None) -> RevisionState:
    """Where a database at ``revision`` stands against this code's head.

    ``ahead``: a revision these scripts do not know, written by a newer release
    (its migrations are additive, so this code can serve it).
    """
    if revision is None:
        return "unmigrated"
    if revision == head_revision():
        return "head"
    try:
        _scripts().get_revision(revision)
    except CommandError:
        return "ahead"
    return "behind"


def servable(revision: str | None) -> bool:
    """Whether this code may serve a database at ``revision`` (at or ahead of head)."""
    return revision_state(revision) in ("head", "ahead")


async def current_revision(db: Database) -> str | None:
    """The revision the database is at; None when it was never migrated."""
    async with db.admin_tx() as conn:
        try:
            value = await conn.fetchval(sql.QUERIES["current_revision"])
        except asyncpg.UndefinedTableError:
            return None
    return None if value is None else str(value)
