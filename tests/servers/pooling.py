"""The suite's pooler mode: ``CPERSONA_TEST_POOLER=pgbouncer`` runs every test through
PgBouncer in transaction mode.

``tests/conftest.py`` then starts one PgBouncer in front of the test server and hands
each test a database URL through it; template creation and drops keep the direct
admin URL. What connects to a test database learns the mode here: settings get
``db_pooler="pgbouncer"`` (:func:`apply`), CLI subprocesses get ``CPERSONA_DB_POOLER``
and the direct URL as ``CPERSONA_MIGRATION_DATABASE_URL`` (:func:`cli_env`), and tests
that read the catalogue with a bare connection ask for :func:`direct_url`.
"""

from __future__ import annotations

import dataclasses
import os

from service.config import POOLERS, DbPooler, Settings

MODE = os.environ.get("CPERSONA_TEST_POOLER", "").strip().lower() or "none"
_DIRECT: dict[str, str] = {}
"""Each live pooled test-database URL -> the direct URL of the same database."""


def check_mode() -> None:
    if MODE not in POOLERS:
        raise ValueError(f"CPERSONA_TEST_POOLER: expected one of {', '.join(POOLERS)}, got {MODE}")


def db_pooler() -> DbPooler:
    return "pgbouncer" if MODE == "pgbouncer" else "none"


def register(pooled: str, direct: str) -> None:
    _DIRECT[pooled] = direct


def forget(pooled: str) -> None:
    _DIRECT.pop(pooled, None)


def direct_url(url: str) -> str:
    """The direct URL of the database ``url`` names (``url`` itself when not pooled)."""
    return _DIRECT.get(url, url)


def apply(settings: Settings) -> Settings:
    """``settings`` told about the suite's pooler (unchanged without one)."""
    if settings.db_pooler == db_pooler():
        return settings
    return dataclasses.replace(settings, db_pooler=db_pooler())


def cli_env(url: str | None) -> dict[str, str]:
    """The environment a CLI subprocess needs for the pooled database ``url``."""
    if url is None or url not in _DIRECT:
        return {}
    return {"CPERSONA_DB_POOLER": "pgbouncer", "CPERSONA_MIGRATION_DATABASE_URL": _DIRECT[url]}
