"""Alembic environment: plain-SQL migrations over a synchronous psycopg engine.

Migrations never import the application. The database URL comes from
``config.attributes["database_url"]`` (set by ``cpersona-service migrate``) or the
``DATABASE_URL`` environment variable, with the scheme switched to psycopg.

Online runs hold a Postgres advisory lock for their whole duration, so two
``migrate`` runs (two hosts, two pods, a release job and an embedded start) never
race: the second waits (polling, see ``_lock``), then finds the database at head and does nothing. A
database already at a revision these scripts do not know (a newer release migrated
it) is left alone: its migrations are additive, so this code still works with it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time

from alembic import context
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, create_engine, pool

MIGRATION_LOCK_SQL = "SELECT pg_try_advisory_lock(7165064448493977185)"  # "cpersona", a bigint
MIGRATION_UNLOCK_SQL = "SELECT pg_advisory_unlock(7165064448493977185)"
LOCK_POLL_SECONDS = 0.5
LOCK_WAIT_SECONDS = 3600.0  # a migration with an online backfill may take long


def _lock(connection: Connection) -> None:
    """Take the migration lock, polling with a try-lock between short transactions.

    A waiter blocked inside ``pg_advisory_lock`` would hold a snapshot, and a migration
    that builds an index CONCURRENTLY waits for every older snapshot: the two would
    deadlock. Each try is an instant statement, so the holder's CONCURRENTLY never
    waits on a waiter.
    """
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while not connection.exec_driver_sql(MIGRATION_LOCK_SQL).scalar():
        connection.commit()
        if time.monotonic() > deadline:
            raise RuntimeError("another migration has held the migration lock for an hour")
        time.sleep(LOCK_POLL_SECONDS)


def _database_url() -> str:
    url = context.config.attributes.get("database_url") or os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError("DATABASE_URL is not set")
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", str(url))


def run_migrations_offline() -> None:
    context.configure(url=_database_url(), target_metadata=None, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _ahead_of_these_scripts(connection: Connection) -> bool:
    """Whether the database is at a revision these scripts do not know."""
    current = MigrationContext.configure(connection).get_current_revision()
    connection.commit()
    if current is None:
        return False
    try:
        ScriptDirectory.from_config(context.config).get_revision(current)
    except CommandError:
        return True
    return False


def run_migrations_online() -> None:
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _lock(connection)
        connection.commit()  # the session lock outlives it; alembic opens its own transactions
        try:
            if not _ahead_of_these_scripts(connection):
                context.configure(
                    connection=connection, target_metadata=None, transaction_per_migration=True
                )
                with context.begin_transaction():
                    context.run_migrations()
        finally:
            with contextlib.suppress(Exception):  # closing the connection releases it too
                connection.exec_driver_sql(MIGRATION_UNLOCK_SQL)
                connection.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
