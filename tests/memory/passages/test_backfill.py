"""The passage backfill (docs/architecture.md, "Passages"): rows stored before passages
existed get them, online in bounded batches, resumable, and an embedder that is down
meanwhile loses nothing (the rows keep the vector they had, so recall still answers)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest

from service.config import Settings
from service.db import queue as queue_queries
from service.db.pool import Database
from service.memory import tenants
from service.memory.library import Library, build_library
from service.memory.queue import backlog, worker
from service.models import TenantId
from tests.memory.passages.test_build import _assert_passages_of, _fetch, long_text
from tests.servers.embedding import EmbeddingServer, running_server

ROWS = 40


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=8)


@pytest.fixture(autouse=True)
def fake(server: EmbeddingServer) -> EmbeddingServer:
    server.reset()
    return server


@pytest.fixture
async def http_lib(
    db: Database, settings: Settings, server: EmbeddingServer
) -> AsyncIterator[Library]:
    lib = build_library(
        db,
        dataclasses.replace(
            settings,
            embedding_mode="http",
            embedding_url=server.url,
            embedding_model="fake-8d",
            embedding_dimensions=8,
            embedding_timeout_secs=2.0,
            embedding_breaker_failures=0,
            worker_batch=100,
        ),
    )
    yield lib
    await lib.aclose()


async def _populated(lib: Library) -> tuple[TenantId, dict[int, str]]:
    """ROWS memories as a release before passages left them: embedded, no passages; one
    in four is long."""
    tenant = TenantId((await tenants.create_tenant(lib.db, "acme")).id)
    texts = {}
    async with lib.db.admin_tx() as conn:
        agent = await conn.fetchval(
            "INSERT INTO agents (tenant_id, name) VALUES ($1, 'a') RETURNING id", tenant
        )
        for n in range(ROWS):
            text = long_text(100 + n) if n % 4 == 0 else f"short note {n}"
            texts[
                await conn.fetchval(
                    "INSERT INTO memories (tenant_id, agent_id, content, embedding, "
                    "embedding_model) VALUES ($1, $2, $3, '[1,0,0,0,0,0,0,0]', 'fake-8d') "
                    "RETURNING id",
                    tenant,
                    agent,
                    text,
                )
            ] = text
    return tenant, texts


async def test_the_backfill_queues_long_rows_in_bounded_batches_and_is_resumable(
    http_lib: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant, texts = await _populated(http_lib)
    long_ids = {i for i, text in texts.items() if len(text) > 300}
    statements: list[int] = []
    read = queue_queries.passage_candidates

    async def counted(*args: object) -> object:
        statements.append(1)
        return await read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(backlog, "PASSAGE_BATCH", 7)
    monkeypatch.setattr(queue_queries, "passage_candidates", counted)
    assert await backlog.enqueue_passages(http_lib) == len(long_ids)
    assert len(statements) >= ROWS // 7  # bounded: 7 rows read per statement
    jobs = await _fetch(http_lib.db, "SELECT item_id FROM embedding_jobs")
    assert {job["item_id"] for job in jobs} == long_ids
    assert await backlog.enqueue_passages(http_lib) == 0  # a rerun adds nothing
    await worker.drain_once(http_lib)
    for memory in long_ids:
        await _assert_passages_of(http_lib.db, memory, texts[memory])
    assert await backlog.enqueue_passages(http_lib, tenant) == 0  # done rows are skipped


async def test_a_row_longer_than_a_windows_characters_that_fits_one_window_is_not_embedded_again(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    """A row of more characters than a window has tokens may still fit one window (most
    words are one token): the backfill measures it as its job would divide it, marks it
    done and queues nothing, so a bulk load's rows are not embedded a second time."""
    tenant, texts = await _populated(http_lib)
    fitting = "plain words said plainly. " * 16  # 416 characters, about 100 tokens
    async with http_lib.db.admin_tx() as conn:
        agent = await conn.fetchval("SELECT id FROM agents WHERE tenant_id = $1", tenant)
        fit_id = await conn.fetchval(
            "INSERT INTO memories (tenant_id, agent_id, content, embedding, embedding_model) "
            "VALUES ($1, $2, $3, '[1,0,0,0,0,0,0,0]', 'fake-8d') RETURNING id",
            tenant,
            agent,
            fitting,
        )
    long_ids = {i for i, text in texts.items() if len(text) > 300}
    assert len(fitting) > 300
    assert await backlog.enqueue_passages(http_lib) == len(long_ids)
    jobs = await _fetch(http_lib.db, "SELECT item_id FROM embedding_jobs")
    assert {job["item_id"] for job in jobs} == long_ids  # not the row that fits
    async with http_lib.db.admin_tx() as conn:
        marked = await conn.fetchval(
            "SELECT passages_hash = content_hash FROM memories WHERE id = $1", fit_id
        )
    assert marked is True
    await worker.drain_once(http_lib)
    assert fitting not in fake.received
    assert await backlog.enqueue_passages(http_lib) == 0


async def test_the_embedder_down_during_the_backfill_loses_nothing(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    _, texts = await _populated(http_lib)
    long_ids = {i for i, text in texts.items() if len(text) > 300}
    assert await backlog.enqueue_passages(http_lib) == len(long_ids)
    fake.reset(failing=True)
    result = await worker.drain_once(http_lib)
    assert (result.failed, result.passages) == (len(long_ids), 0)
    kept = await _fetch(http_lib.db, "SELECT count(*) FROM memories WHERE embedding IS NULL")
    assert kept[0][0] == 0  # every row keeps its vector while its passages wait
    assert len(await _fetch(http_lib.db, "SELECT 1 FROM embedding_jobs")) == len(long_ids)
    fake.reset()
    await _fetch(http_lib.db, "UPDATE embedding_jobs SET run_after = clock_timestamp()")
    assert (await worker.drain_once(http_lib)).embedded == len(long_ids)
    for memory in long_ids:
        await _assert_passages_of(http_lib.db, memory, texts[memory])


async def test_check_health_reports_missing_passages_and_its_fix_queues_them(
    http_lib: Library,
) -> None:
    """check_health's missing_passages (docs/health.md): embedded long rows whose passages
    were never built for their text; the fix queues those without a job."""
    from service.mcp.render import health as render_health
    from service.memory import health

    tenant, texts = await _populated(http_lib)
    long_ids = {i for i, text in texts.items() if len(text) > 300}
    body = render_health.health_report(await health.check_health(http_lib, tenant))
    [found] = [item for item in body["issues"] if item["check"] == "missing_passages"]
    counts = (found["count"], found["queued"], found["repairable"])
    assert counts == (len(long_ids), 0, len(long_ids))
    fixed = await health.check_health(http_lib, tenant, fix=True, checks=["missing_passages"])
    assert fixed is not None
    jobs = await _fetch(http_lib.db, "SELECT item_id FROM embedding_jobs")
    assert {job["item_id"] for job in jobs} == long_ids
    await worker.drain_once(http_lib)
    after = render_health.health_report(await health.check_health(http_lib, tenant))
    assert "missing_passages" not in {item["check"] for item in after["issues"]}
