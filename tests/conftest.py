"""Test fixtures: a real Postgres, a migrated template, a fresh database per test.

The server comes from ``CPERSONA_TEST_DATABASE_URL`` (an admin URL to any
Postgres 15+ with pgvector and pg_trgm) when set, otherwise the same embedded
Postgres the service uses by default, started once per session in a temporary
directory. The template is migrated through Alembic, so every run exercises
the migrations; each test gets ``CREATE DATABASE … TEMPLATE`` and a drop.

``CPERSONA_TEST_POOLER=pgbouncer`` puts a real PgBouncer (transaction mode) in
front of that server for the session: ``database_url`` then goes through it, while
the template, the drops and ``direct_database_url`` stay direct
(:mod:`tests.servers.pooling`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from service.config import Settings
from service.db import migrate
from service.db.embedded import EmbeddedPostgres
from service.db.pool import Database
from service.embeddings.base import EmbeddingProvider
from service.extras import local_embeddings_installed
from service.memory.library import Library
from tests.servers import pooling
from tests.servers.postgres import admin_execute, database_of, with_database
from tests.servers.proxies import PgBouncer, pgbouncer
from tests.support import Agent, Served, new_tenant, serve

FAST_SETTINGS = (
    "ALTER SYSTEM SET fsync = off",
    "ALTER SYSTEM SET synchronous_commit = off",
    "ALTER SYSTEM SET full_page_writes = off",
    "SELECT pg_reload_conf()",
)


def pytest_configure(config: pytest.Config) -> None:
    """A private base temp directory per session: pytest prunes the shared numbered ones
    (``/tmp/pytest-of-<user>/pytest-N``) as other sessions start, which would delete the
    embedded test server's data directory under a concurrent run."""
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        config.option.basetemp = tempfile.mkdtemp(prefix="cpersona-tests-")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"database_url", "direct_database_url", "db", "lib", "served", "client"} & set(
            getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    given = os.environ.get("CPERSONA_TEST_DATABASE_URL")
    if given:
        yield given
        return
    server = EmbeddedPostgres(Path(tmp_path_factory.mktemp("embedded-pg")))
    url = server.start()
    asyncio.run(admin_execute(url, *FAST_SETTINGS))
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def template_db(admin_url: str) -> Iterator[str]:
    name = f"cpt_tpl_{uuid.uuid4().hex[:12]}"
    asyncio.run(admin_execute(admin_url, f'CREATE DATABASE "{name}"'))
    migrate.upgrade(with_database(admin_url, name))
    try:
        yield name
    finally:
        asyncio.run(admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def pooler(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgBouncer | None]:
    """The session's PgBouncer under CPERSONA_TEST_POOLER=pgbouncer, else None."""
    pooling.check_mode()
    if pooling.MODE == "none":
        yield None
        return
    with pgbouncer(admin_url, tmp_path_factory.mktemp("pgbouncer")) as bouncer:
        yield bouncer


@pytest.fixture
async def direct_database_url(admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A fresh migrated database, straight to the server (catalogue reads, migrations)."""
    name = f"cpt_{uuid.uuid4().hex[:12]}"
    await admin_execute(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    try:
        yield with_database(admin_url, name)
    finally:
        await admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(direct_database_url: str, pooler: PgBouncer | None) -> Iterator[str]:
    """The test's database as the service reaches it: through the pooler when there is one."""
    if pooler is None:
        yield direct_database_url
        return
    pooled = pooler.url(database_of(direct_database_url))
    pooling.register(pooled, direct_database_url)
    try:
        yield pooled
    finally:
        pooling.forget(pooled)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Embeddings off, explicitly: most tests are lexical-only and must stay fast.

    The data directory (export areas, the download signing key) is the test's own.
    """
    return Settings(
        log_format="console",
        db_pool_min=1,
        db_pool_max=4,
        embedding_mode="none",
        data_dir=tmp_path / "data",
        db_pooler=pooling.db_pooler(),
    )


@pytest.fixture(scope="session")
def local_embedder() -> Iterator[EmbeddingProvider]:
    """The real local ONNX model, loaded once per session (skips without the extra)."""
    if not local_embeddings_installed():
        pytest.skip("the optional 'local' embedding extra is not installed")
    from service.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider()
    yield provider
    asyncio.run(provider.aclose())


@pytest.fixture
def local_settings(settings: Settings) -> Settings:
    """``settings`` with the local embedding model on, and writes that wait for their
    vector (read-your-embedding, ``CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS`` > 0; 10 s, as the
    model loads on the first call of a busy machine), so a
    test can check a vector right after its write; the default (commit first, embed
    moments later) is tested in ``tests/memory/queue/test_writebehind.py``."""
    return dataclasses.replace(settings, embedding_mode="local", embedding_inline_timeout_secs=10.0)


@pytest.fixture
def local_lib(db: Database, local_settings: Settings, local_embedder: EmbeddingProvider) -> Library:
    """A library embedding with the real local model (shared, so it loads once)."""
    return Library(db, local_settings, local_embedder)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = await Database(
        database_url, min_size=1, max_size=4, pooler=pooling.db_pooler()
    ).open()
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def lib(db: Database, settings: Settings) -> Library:
    return Library(db, settings)


@pytest.fixture
async def served(settings: Settings, database_url: str) -> AsyncIterator[Served]:
    async with serve(settings, database_url) as running:
        yield running


@pytest.fixture
async def client(lib: Library, served: Served) -> Agent:
    """An MCP client of tenant ``acme`` with a read-write key, over real HTTP."""
    return Agent(served, await new_tenant(lib, "acme"))
