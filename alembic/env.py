"""Alembic environment: plain-SQL migrations over a synchronous psycopg engine.

Migrations never import the application. The database URL comes from
``config.attributes["database_url"]`` (set by ``cpersona-service migrate``) or the
``DATABASE_URL`` environment variable, with the scheme switched to psycopg.
"""

from __future__ import annotations

import os
import re

from alembic import context
from sqlalchemy import create_engine, pool


def _database_url() -> str:
    url = context.config.attributes.get("database_url") or os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError("DATABASE_URL is not set")
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", str(url))


def run_migrations_offline() -> None:
    context.configure(url=_database_url(), target_metadata=None, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection, target_metadata=None, transaction_per_migration=True
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
