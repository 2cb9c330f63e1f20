"""The durable embedding queue and its worker, against a real HTTP embedding server.

The server (``tests/servers/embedding.py``: uvicorn on 127.0.0.1, its own thread) can be
switched to answer 500, to answer slowly, or to refuse single "poison" texts, so the
provider really is down, slow or picky; the database is real. Covered: inline failures
queue the row in the write transaction, the worker embeds it once the server recovers,
retries back off (capped) and are never given up, concurrent drainers never share a
job, deleted rows and rows edited
while their embedding was in flight are never given a stale vector, get_queue_status
per tenant, delete_agent_data's job count, model recording and change, and the
``worker`` / ``reembed`` commands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest

from service.config import Settings
from service.db.pool import Database
from service.embeddings.base import l2_normalise
from service.memory import agents, episodes, tenants
from service.memory.library import Library, build_library
from service.memory.memories import edits, store
from service.memory.queue import backlog, worker
from service.models import TenantId
from tests.servers.embedding import EmbeddingServer, fake_vector, running_server
from tests.support import run_cli


def _pending(status: backlog.QueueStatus) -> int:
    """The pending count of a draining queue."""
    assert status.active is not None
    return status.active.pending


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=8)


@pytest.fixture(autouse=True)
def fake(server: EmbeddingServer) -> EmbeddingServer:
    server.reset()
    return server


@pytest.fixture
def embed_url(server: EmbeddingServer) -> str:
    return server.url


@pytest.fixture
def http_settings(settings: Settings, embed_url: str) -> Settings:
    """The queue's own retry rules, without the circuit breaker (tested on its own)."""
    return dataclasses.replace(
        settings,
        embedding_mode="http",
        embedding_url=embed_url,
        embedding_model="fake-8d",
        embedding_dimensions=8,
        embedding_timeout_secs=2.0,
        embedding_inline_timeout_secs=0.5,
        embedding_breaker_failures=0,
        worker_poll_secs=0.05,
    )


@pytest.fixture
async def http_lib(db: Database, http_settings: Settings) -> AsyncIterator[Library]:
    lib = build_library(db, http_settings)
    yield lib
    await lib.aclose()


async def _tenant(lib: Library, slug: str = "acme") -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, slug)).id)


async def _store(lib: Library, tenant: TenantId, content: str, agent: str = "a") -> int:
    request = store.StoreRequest(agent_id=agent, message={"content": content})
    body = await store.store(lib, tenant, request)
    assert isinstance(body, store.Stored), body
    return body.memory_id


async def _fetch(db: Database, query: str, *args: Any) -> list[asyncpg.Record]:
    async with db.admin_tx() as conn:
        return await conn.fetch(query, *args)


async def _jobs(db: Database) -> list[asyncpg.Record]:
    return await _fetch(
        db,
        "SELECT item_kind, item_id, attempts, last_error, "
        "extract(epoch FROM run_after - clock_timestamp())::float8 AS wait "
        "FROM embedding_jobs ORDER BY id",
    )


async def _memory(db: Database, memory_id: int) -> asyncpg.Record:
    [row] = await _fetch(
        db, "SELECT content, embedding, embedding_model FROM memories WHERE id = $1", memory_id
    )
    return row


def _assert_vector_of(row: asyncpg.Record, text: str, model: str = "fake-8d") -> None:
    assert row["embedding_model"] == model
    assert row["embedding"].to_list() == pytest.approx(l2_normalise(fake_vector(text)), abs=1e-6)


async def test_down_provider_queues_the_row_and_the_worker_embeds_it_later(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    body = await store.store(
        http_lib, tenant, store.StoreRequest(agent_id="a", message={"content": "queued fact"})
    )
    assert isinstance(body, store.Stored), body
    assert body == store.Stored(memory_id=body.memory_id, embedded=False, truncated=False)
    assert (await _memory(http_lib.db, body.memory_id))["embedding"] is None
    [job] = await _jobs(http_lib.db)
    assert (job["item_kind"], job["item_id"], job["attempts"]) == ("mem", body.memory_id, 0)
    assert "HTTP 500" in job["last_error"]
    status = (await backlog.queue_status(http_lib, tenant)).active
    assert status is not None
    assert status.pending == 1
    assert status.oldest_pending_seconds is not None
    assert status.oldest_pending_seconds >= 0
    fake.reset()
    result = await worker.drain_once(http_lib)
    assert (result.claimed, result.embedded, result.failed) == (1, 1, 0)
    _assert_vector_of(await _memory(http_lib.db, body.memory_id), "queued fact")
    assert await _jobs(http_lib.db) == []
    assert _pending(await backlog.queue_status(http_lib, tenant)) == 0


async def test_slow_provider_does_not_hold_the_write(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(delay=3.0)
    started = time.perf_counter()
    memory = await _store(http_lib, tenant, "written while the embedder dawdles")
    assert time.perf_counter() - started < 1.5  # inline timeout 0.5 s, not 3 s
    [job] = await _jobs(http_lib.db)
    assert job["item_id"] == memory
    assert "timed out" in job["last_error"]


async def test_archive_and_update_queue_when_down_and_drain_later(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    memory = await _store(http_lib, tenant, "first version")
    _assert_vector_of(await _memory(http_lib.db, memory), "first version")
    fake.reset(failing=True)
    episode = await episodes.archive_episode(
        http_lib,
        tenant,
        episodes.ArchiveRequest(agent_id="a", summary="a session", keywords="k1, k2"),
    )
    updated = await edits.update_memory(http_lib, tenant, memory, "second version")
    assert updated == edits.Updated(memory_id=memory, truncated=False)
    assert (await _memory(http_lib.db, memory))["embedding"] is None
    jobs = {(job["item_kind"], job["item_id"]) for job in await _jobs(http_lib.db)}
    assert jobs == {("ep", episode.episode_id), ("mem", memory)}
    fake.reset()
    assert (await worker.drain_once(http_lib)).embedded == 2
    assert sorted(fake.answered) == ["a session k1, k2", "second version"]
    _assert_vector_of(await _memory(http_lib.db, memory), "second version")


async def test_failures_back_off_exponentially_up_to_a_cap_and_are_never_given_up(
    db: Database, http_settings: Settings, fake: EmbeddingServer
) -> None:
    """Issue 10 (4): rows that failed more often than CPERSONA_TASK_MAX_RETRIES stayed
    queued as ``failed`` until an operator ran ``reembed``; now they keep being retried
    (the delay doubles MAX_RETRIES times, then stays) and are embedded once the provider
    answers again, with no operator step."""
    lib = build_library(db, dataclasses.replace(http_settings, task_retry_delay=10))
    try:
        tenant = await _tenant(lib)
        fake.reset(failing=True)
        memory = await _store(lib, tenant, "stubborn")
        for attempt, wait in ((1, 10), (2, 20), (3, 40), (4, 80), (5, 80), (6, 80)):
            result = await worker.drain_once(lib)
            assert (result.claimed, result.failed) == (1, 1)
            [job] = await _jobs(db)
            assert job["attempts"] == attempt
            assert wait - 1.5 < job["wait"] <= wait
            assert "HTTP 500" in job["last_error"]
            await _fetch(db, "UPDATE embedding_jobs SET run_after = clock_timestamp()")
        status = (await backlog.queue_status(lib, tenant)).active
        assert status is not None
        assert (status.pending, status.retrying) == (1, 1)
        fake.reset()
        assert (await worker.drain_once(lib)).embedded == 1
        _assert_vector_of(await _memory(db, memory), "stubborn")
        assert _pending(await backlog.queue_status(lib, tenant)) == 0
    finally:
        await lib.aclose()


async def test_one_bad_text_does_not_fail_its_batch(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    ids = [await _store(http_lib, tenant, text) for text in ("good one", "!poison", "good two")]
    fake.reset()
    result = await worker.drain_once(http_lib)
    assert (result.claimed, result.embedded, result.failed) == (3, 2, 1)
    [job] = await _jobs(http_lib.db)
    assert (job["item_id"], job["attempts"]) == (ids[1], 1)
    assert "HTTP 400" in job["last_error"]


async def test_one_tenants_refused_texts_fail_only_its_own_rows_and_circuit(
    db: Database, http_lib: Library, http_settings: Settings, fake: EmbeddingServer
) -> None:
    """One drain holds two tenants' rows; the provider refuses ``abuser``'s (HTTP 400).
    ``victim``'s row is embedded all the same, and the failures count against the
    abuser's own circuit, not the shared one every tenant's recall and writes go
    through (the draining process's breaker opens after 2 failures here)."""
    abuser, victim = await _tenant(http_lib, "abuser"), await _tenant(http_lib, "victim")
    fake.reset(failing=True)  # the rows are queued (the writing process has no breaker)
    for n in range(3):
        await _store(http_lib, abuser, f"!poison {n}")
    kept = await _store(http_lib, victim, "kiwi notes")
    fake.reset()
    lib = build_library(db, dataclasses.replace(http_settings, embedding_breaker_failures=2))
    try:
        result = await worker.drain_once(lib)
        assert (result.claimed, result.embedded, result.failed) == (4, 1, 3)
        _assert_vector_of(await _memory(db, kept), "kiwi notes")
        assert lib.breaker.state == "closed"
        assert lib.breaker.tenant_state(str(abuser)) == "open"
        assert lib.breaker.tenant_state(str(victim)) == "closed"
    finally:
        await lib.aclose()


async def test_two_concurrent_drainers_never_embed_the_same_job(
    database_url: str, http_lib: Library, http_settings: Settings, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    contents = [f"fact number {n}" for n in range(40)]
    for content in contents:
        await _store(http_lib, tenant, content)
    fake.reset(delay=0.05)
    other_db = await Database(database_url, min_size=1, max_size=4).open()
    other = build_library(other_db, http_settings)

    async def drain_all(lib: Library) -> int:
        embedded = 0
        while (result := await worker.drain_once(lib, limit=5)).claimed:
            embedded += result.embedded
        return embedded

    try:
        counts = await asyncio.gather(drain_all(http_lib), drain_all(other))
    finally:
        await other.aclose()
        await other_db.close()
    assert sum(counts) == 40
    assert min(counts) > 0  # both really drained
    assert sorted(fake.answered) == sorted(contents)  # each text embedded exactly once
    assert await _jobs(http_lib.db) == []


async def test_fresh_writes_are_embedded_before_a_bulk_re_embed(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    await _store(http_lib, tenant, "embedded long ago")
    assert await backlog.enqueue_reembed(http_lib, tenant, every_row=True, reset=True) == 1
    fake.reset(failing=True)
    fresh = await _store(http_lib, tenant, "written just now")
    fake.reset()
    assert (await worker.drain_once(http_lib, limit=1)).embedded == 1
    assert fake.answered == ["written just now"]
    assert (await _memory(http_lib.db, fresh))["embedding"] is not None


async def test_jobs_of_deleted_rows_are_dropped(http_lib: Library, fake: EmbeddingServer) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    deleted_by_tool = await _store(http_lib, tenant, "deleted through the tool")
    vanished = await _store(http_lib, tenant, "vanished behind the queue's back")
    episode = await episodes.archive_episode(
        http_lib, tenant, episodes.ArchiveRequest(agent_id="a", summary="short-lived")
    )
    deleted = await edits.delete_memory(http_lib, tenant, deleted_by_tool)
    assert deleted == edits.Deleted(deleted_by_tool)
    deleted_episode = await episodes.delete_episode(http_lib, tenant, episode.episode_id)
    assert deleted_episode == episodes.EpisodeDeleted(episode.episode_id)
    assert [job["item_id"] for job in await _jobs(http_lib.db)] == [vanished]
    await _fetch(http_lib.db, "DELETE FROM memories WHERE id = $1", vanished)
    assert await _jobs(http_lib.db) == []  # any delete drops the row's job (a trigger)
    orphan = "INSERT INTO embedding_jobs (tenant_id, item_kind, item_id) VALUES ($1, 'mem', $2)"
    await _fetch(http_lib.db, orphan, tenant, vanished)  # a job whose row is gone anyway
    fake.reset()
    result = await worker.drain_once(http_lib)
    assert (result.claimed, result.dropped, result.embedded) == (1, 1, 0)
    assert fake.received == []
    assert await _jobs(http_lib.db) == []


async def _wait_for(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_an_edit_during_embedding_is_never_overwritten_by_the_stale_vector(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    memory = await _store(http_lib, tenant, "version A")
    fake.reset(delay=0.8)
    drain = asyncio.create_task(worker.drain_once(http_lib))
    await _wait_for(lambda: "version A" in fake.received)
    # the edit's own inline embedding times out too (0.5 s < 0.8 s): queued again
    updated = await edits.update_memory(http_lib, tenant, memory, "version B")
    assert updated == edits.Updated(memory_id=memory)
    result = await drain
    assert (result.claimed, result.embedded) == (1, 0)
    row = await _memory(http_lib.db, memory)
    assert (row["content"], row["embedding"]) == ("version B", None)
    [job] = await _jobs(http_lib.db)
    assert job["attempts"] == 0
    assert job["wait"] <= 0  # due again: the new content still needs its vector
    fake.reset()
    assert (await worker.drain_once(http_lib)).embedded == 1
    _assert_vector_of(await _memory(http_lib.db, memory), "version B")


async def test_content_changed_behind_the_queue_is_requeued_not_overwritten(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    memory = await _store(http_lib, tenant, "original text")
    fake.reset(delay=0.5)
    drain = asyncio.create_task(worker.drain_once(http_lib))
    await _wait_for(lambda: "original text" in fake.received)
    await _fetch(http_lib.db, "UPDATE memories SET content = 'rewritten' WHERE id = $1", memory)
    result = await drain
    assert (result.embedded, result.requeued) == (0, 1)
    assert (await _memory(http_lib.db, memory))["embedding"] is None
    fake.reset()
    assert (await worker.drain_once(http_lib)).embedded == 1
    _assert_vector_of(await _memory(http_lib.db, memory), "rewritten")


async def test_queue_status_is_per_tenant(http_lib: Library, fake: EmbeddingServer) -> None:
    alpha, beta = await _tenant(http_lib, "alpha"), await _tenant(http_lib, "beta")
    fake.reset(failing=True)
    await _store(http_lib, alpha, "alpha's backlog")
    await _store(http_lib, alpha, "more of alpha's backlog")
    assert _pending(await backlog.queue_status(http_lib, alpha)) == 2
    assert await backlog.queue_status(http_lib, beta) == backlog.QueueStatus(
        active=backlog.ActiveQueue(
            pending=0, retrying=0, oldest_pending_seconds=None, max_retries=3, retry_delay=30
        )
    )
    assert (await worker.drain_once(http_lib, tenant_id=beta)).claimed == 0


async def test_queue_disabled_stores_without_jobs(
    db: Database, http_settings: Settings, fake: EmbeddingServer
) -> None:
    lib = build_library(db, dataclasses.replace(http_settings, task_queue_enabled=False))
    try:
        tenant = await _tenant(lib)
        fake.reset(failing=True)
        await _store(lib, tenant, "not queued")
        assert await _jobs(db) == []
        assert await backlog.queue_status(lib, tenant) == backlog.QueueStatus(active=None)
    finally:
        await lib.aclose()


async def test_delete_agent_data_counts_the_agents_jobs(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    await _store(http_lib, tenant, "a1")
    await _store(http_lib, tenant, "a2")
    await episodes.archive_episode(
        http_lib, tenant, episodes.ArchiveRequest(agent_id="a", summary="a's session")
    )
    keep = await _store(http_lib, tenant, "b1", agent="b")
    body = await agents.delete_agent_data(http_lib, tenant, "a")
    assert body.pending_tasks == 3
    assert [job["item_id"] for job in await _jobs(http_lib.db)] == [keep]


async def _settings_row(db: Database) -> tuple[str, int] | None:
    rows = await _fetch(db, "SELECT model, dimension FROM embedding_settings")
    return (rows[0]["model"], rows[0]["dimension"]) if rows else None


async def test_model_is_recorded_and_a_change_queues_re_embeds(
    db: Database, settings: Settings, http_settings: Settings, fake: EmbeddingServer
) -> None:
    lexical = Library(db, settings)
    tenant = await _tenant(lexical)
    old_row = await _store(lexical, tenant, "stored while embeddings were off")
    first = build_library(db, http_settings)
    second = build_library(db, dataclasses.replace(http_settings, embedding_model="fake-v2"))
    try:
        await worker.start_up(first)  # the declared width: the provider is not asked
        assert await _settings_row(db) == ("fake-8d", 8)
        assert fake.received == []
        assert [job["item_id"] for job in await _jobs(db)] == [old_row]
        assert (await worker.drain_once(first)).embedded == 1
        await worker.start_up(first)  # same model: nothing to do
        assert await _jobs(db) == []
        await worker.start_up(second)
        assert await _settings_row(db) == ("fake-v2", 8)
        assert [job["item_id"] for job in await _jobs(db)] == [old_row]
        assert (await _memory(db, old_row))["embedding_model"] == "fake-8d"  # no wipe
        assert (await worker.drain_once(second)).embedded == 1
        assert (await _memory(db, old_row))["embedding_model"] == "fake-v2"
        later = await _store(lexical, tenant, "stored while embeddings were off again")
        await worker.start_up(second)  # no change: start-up queues nothing
        assert await _jobs(db) == []
        stop = asyncio.Event()
        stop.set()  # the worker's start-up sweep runs even when stopped at once
        await worker.run_worker(second, stop, model_recorded=True)
        assert [job["item_id"] for job in await _jobs(db)] == [later]
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_width_change_of_the_same_model_re_queues_the_rows_of_the_old_width(
    db: Database, http_settings: Settings, fake: EmbeddingServer
) -> None:
    """Issue 10 (6): only model names were compared, so rows of the old width stayed
    unusable after a width change; they are queued and re-embedded at the new width."""
    narrow = build_library(db, http_settings)
    wide = build_library(db, dataclasses.replace(http_settings, embedding_dimensions=16))
    try:
        tenant = await _tenant(narrow)
        await worker.start_up(narrow)
        memory = await _store(narrow, tenant, "embedded at width 8")
        assert await _jobs(db) == []
        await worker.start_up(wide)
        assert await _settings_row(db) == ("fake-8d", 16)
        assert [job["item_id"] for job in await _jobs(db)] == [memory]
        fake.dimension = 16
        assert (await worker.drain_once(wide)).embedded == 1
        async with db.admin_tx() as conn:
            width = await conn.fetchval("SELECT embedding_dim FROM memories WHERE id = $1", memory)
        assert width == 16
    finally:
        fake.dimension = 8
        await narrow.aclose()
        await wide.aclose()


async def test_the_worker_loop_drains_and_stops_gracefully(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    fake.reset(failing=True)
    memory = await _store(http_lib, tenant, "for the background worker")
    fake.reset()
    stop = asyncio.Event()
    draining = asyncio.create_task(worker.run_worker(http_lib, stop))
    deadline = time.monotonic() + 10
    while (await _memory(http_lib.db, memory))["embedding"] is None:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(draining, timeout=5)
    assert await _settings_row(http_lib.db) == ("fake-8d", 8)


def _cli_env(database_url: str, **extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    environ.update({"DATABASE_URL": database_url, "CPERSONA_EMBEDDING_MODE": "local", **extra})
    return environ


def _cli(database_url: str, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {"CPERSONA_EMBEDDING_MODE": "local", **extra}
    return run_cli(database_url, *args, env=env, timeout=90)


async def _count_embedded(db: Database) -> int:
    [row] = await _fetch(db, "SELECT count(embedding) AS n FROM memories")
    return int(row["n"])


async def test_reembed_command_queues_waits_and_reports(lib: Library, database_url: str) -> None:
    tenant = await _tenant(lib)
    for content in ("one", "two", "three"):
        await _store(lib, tenant, content)
    queued = await asyncio.to_thread(_cli, database_url, "reembed", "--tenant", "acme", "--no-wait")
    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.startswith("queued 3 rows")
    assert await _count_embedded(lib.db) == 0
    done = await asyncio.to_thread(_cli, database_url, "reembed", "--tenant", "acme", "--all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "re-embedding: 3/3 done, 0 retrying"
    assert await _count_embedded(lib.db) == 3
    missing = await asyncio.to_thread(_cli, database_url, "reembed", "--tenant", "nope")
    assert missing.returncode == 1
    assert "no tenant" in missing.stderr
    off = await asyncio.to_thread(_cli, database_url, "reembed", CPERSONA_EMBEDDING_MODE="none")
    assert off.returncode == 1
    assert "embeddings are off" in off.stderr


async def _manual_vacuums(db: Database, table: str) -> int:
    [row] = await _fetch(
        db, "SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = $1", table
    )
    return int(row["n"])


async def test_reembed_command_vacuums_the_tables_it_rewrote(
    lib: Library, database_url: str
) -> None:
    """Each embedding written is an update that leaves the row's old version in every
    index until a vacuum; ``reembed`` vacuums memories, episodes and passages once its
    jobs are drained, and ``--no-wait`` (nothing rewritten yet) does not."""
    tenant = await _tenant(lib)
    for content in ("one", "two", "three"):
        await _store(lib, tenant, content)
    tables = ("memories", "episodes", "passages")
    before = [await _manual_vacuums(lib.db, t) for t in tables]
    queued = await asyncio.to_thread(_cli, database_url, "reembed", "--no-wait")
    assert queued.returncode == 0, queued.stderr
    done = await asyncio.to_thread(_cli, database_url, "reembed")
    assert done.returncode == 0, done.stderr
    assert await _count_embedded(lib.db) == 3
    deadline = time.monotonic() + 10  # a backend reports its counts as it ends
    while [await _manual_vacuums(lib.db, t) for t in tables] != [n + 1 for n in before]:
        assert time.monotonic() < deadline, [await _manual_vacuums(lib.db, t) for t in tables]
        await asyncio.sleep(0.1)


async def test_worker_command_embeds_the_backlog_and_stops_on_sigterm(
    lib: Library, database_url: str
) -> None:
    tenant = await _tenant(lib)
    await _store(lib, tenant, "waiting for the worker")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "service",
        "worker",
        env=_cli_env(database_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while await _count_embedded(lib.db) == 0:
            assert process.returncode is None
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    stderr = err.decode()
    assert process.returncode == 0, stderr
    assert "worker stopped" in stderr
