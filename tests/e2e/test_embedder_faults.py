"""Fault injection: an embedding provider that is down, hangs, answers the wrong width
or HTTP 500 for longer than the old retry budget, against the real app and worker.

Issue 10 (4, 5, 6). Before: a ~90 s outage left rows ``failed`` for good, and those rows
were then missing from a default recall even for an exact-content query; a hanging
embedder made every recall wait the 30 s embedding timeout; a provider whose first
answer had the wrong width pinned that width and every later store failed. Now,
with the embedding server (``tests/servers/embedding.py``, real HTTP on loopback) in
each failure mode: stores keep succeeding within the inline timeout, recalls answer
within 2 s with the ``fault`` advisory and still find the exact-content row, no job
reaches a terminal state however often it failed, and once the provider is back the
app's own worker embeds every row with the declared width and recalls are healthy.

A held embedder no longer holds up a recall's lexical half either: it runs while the
query is being embedded (Postgres shows it, held up by a lock the test takes so it can
be seen), and its connection is idle, not idle in a transaction, before the vector
arrives (issue 15). Before, nothing ran until the vector had arrived.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import Settings
from service.memory.library import Library
from tests.servers.embedding import EmbeddingServer, Mode, running_server
from tests.support import Agent, new_tenant, serve

WIDTH = 384
STORE_LIMIT_SECONDS = 1.5  # the inline timeout (0.5 s) plus an MCP round trip
RECALL_LIMIT_SECONDS = 2.0


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


@pytest.fixture
def provider(server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    server.reset()
    yield server
    server.reset()


def fault_settings(settings: Settings, server: EmbeddingServer, *, queue: bool = True) -> Settings:
    """The provider at ``server``; short timeouts, a quick breaker and quick retries. The
    app's worker drains the queue (the tests' app runs it, as with the embedded database)
    unless ``queue`` is off: then rows stored without a vector stay so."""
    return dataclasses.replace(
        settings,
        embedding_mode="http",
        embedding_url=server.url,
        embedding_model="fake-384",
        embedding_dimensions=WIDTH,
        embedding_timeout_secs=1.0,
        embedding_inline_timeout_secs=0.5,
        embedding_query_timeout_secs=1.0,
        embedding_breaker_failures=3,
        embedding_breaker_cooldown_secs=0.5,
        task_retry_delay=1,
        task_max_retries=1,  # the old budget: one failed attempt and a row was given up
        worker_poll_secs=0.05,
        task_queue_enabled=queue,
    )


async def timed(client: Agent, tool: str, **args: Any) -> tuple[Any, float]:
    started = time.monotonic()
    body = await client.call(tool, **args)
    return body, time.monotonic() - started


async def rows(lib: Library) -> list[dict[str, Any]]:
    async with lib.db.admin_tx() as conn:
        records = await conn.fetch(
            "SELECT m.content, m.embedding_model, m.embedding_dim, j.attempts "
            "FROM memories m LEFT JOIN embedding_jobs j ON j.item_kind = 'mem' "
            "AND j.item_id = m.id ORDER BY m.id"
        )
    return [dict(r) for r in records]


async def wait_until(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, f"not reached within {seconds} s: {what}"
        await asyncio.sleep(0.1)


FACTS = [f"the locker code of room {n} is {4000 + n}" for n in range(6)]


@pytest.mark.parametrize("mode", ["down", "hang", "width", "fail"])
async def test_writes_and_reads_survive_a_long_embedder_fault_and_every_row_is_embedded_after(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer, mode: Mode
) -> None:
    async with serve(fault_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        await client.call("store", agent_id="a", message={"content": "stored while healthy"})
        provider.set_mode(mode)
        for fact in FACTS:
            stored, seconds = await timed(client, "store", agent_id="a", message={"content": fact})
            assert stored["result"] == "stored"
            assert seconds < STORE_LIMIT_SECONDS, (mode, seconds)
        for fact in FACTS[:4]:
            found, seconds = await timed(client, "recall", agent_id="a", query=fact)
            assert seconds < RECALL_LIMIT_SECONDS, (mode, seconds)
            assert found["advisory"]["severity"] == "fault"
            assert fact in [row["content"] for row in found["messages"]]

        async def past_the_old_budget() -> bool:
            queued = [row for row in await rows(lib) if row["content"] in FACTS]
            return all(row["attempts"] is not None and row["attempts"] > 1 for row in queued)

        await wait_until(past_the_old_budget, 30, "every job retried more than MAX_RETRIES")
        status = await client.call("get_queue_status")
        assert (status["pending"], status["retrying"]) == (len(FACTS), len(FACTS))
        assert status["oldest_pending_seconds"] > 0

        provider.set_mode("ok")

        async def all_embedded() -> bool:
            return all(row["embedding_dim"] == WIDTH for row in await rows(lib))

        await wait_until(all_embedded, 30, "every row embedded once the provider is back")
        assert {row["embedding_model"] for row in await rows(lib)} == {"fake-384"}
        assert (await client.call("get_queue_status"))["pending"] == 0

        async def healthy() -> bool:
            answer = await client.call("recall", agent_id="a", query=FACTS[0])
            return "advisory" not in answer and answer["messages"][-1]["content"] == FACTS[0]

        await wait_until(healthy, 10, "a healthy recall")


async def test_an_exact_content_query_finds_a_row_stored_during_an_outage(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    """The provider is back (queries are embedded again) but the row still has no vector
    (here the queue is off, so nothing embeds it): full text finds it and the gate keeps
    it (before: only ``deep`` found it)."""
    async with serve(fault_settings(settings, provider, queue=False), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        provider.set_mode("fail")
        await client.call("store", agent_id="a", message={"content": FACTS[0]})
        provider.set_mode("ok")
        for fact in ("a note about the weather", "another note about lunch"):
            await client.call("store", agent_id="a", message={"content": fact})
        embedded = {row["content"]: row["embedding_dim"] for row in await rows(lib)}
        assert embedded[FACTS[0]] is None

        async def answered_healthy() -> bool:  # the breaker may still be open for 0.5 s
            return "advisory" not in await client.call("recall", agent_id="a", query=FACTS[0])

        await wait_until(answered_healthy, 10, "a recall with an embedded query")
        found = await client.call("recall", agent_id="a", query=FACTS[0])
        assert "advisory" not in found
        assert found["messages"][-1]["content"] == FACTS[0]


HELD_SECONDS = 10.0
# pg_stat_activity keeps a query's first 1,024 bytes (track_activity_query_size): the
# statement is known by the start of its header comment
WAITING_LEXICAL = """
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock'
  AND query LIKE '-- The lexical half of a recall%'
"""
LEXICAL_NOT_IDLE = """
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND state <> 'idle'
  AND query LIKE '-- The lexical half of a recall%'
"""
"""Backends running the lexical statement or idle in its transaction (its last query).
Not by pid: behind PgBouncer a server connection serves whichever client comes next,
this test's own polls included."""


async def _fetchval(lib: Library, query: str, *args: object) -> object:
    async with lib.db.admin_tx() as conn:
        return await conn.fetchval(query, *args)


async def test_the_lexical_half_runs_and_lets_go_of_its_connection_while_the_query_embeds(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    slow_query = dataclasses.replace(
        fault_settings(settings, provider, queue=False),
        embedding_timeout_secs=30.0,  # the held request is neither timed out nor retried
        embedding_query_timeout_secs=30.0,
    )
    async with serve(slow_query, database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        fact = "the spare key of the boathouse hangs behind the blue door"
        for content in (fact, "the weather was fine on tuesday"):
            await client.call("store", agent_id="a", message={"content": content})
        assert all(row["embedding_dim"] == WIDTH for row in await rows(lib))

        provider.reset(mode="hang")
        query = "where is the boathouse key"
        async with lib.db.admin_tx() as blocker:
            # only the lexical half reads the calibration: held here, it shows itself
            # in pg_stat_activity, waiting, while the embedding is held too
            await blocker.execute("LOCK TABLE recall_calibration IN ACCESS EXCLUSIVE MODE")
            recall = asyncio.ensure_future(client.call("recall", agent_id="a", query=query))

            async def embedding_held() -> bool:
                return query in provider.received

            await wait_until(embedding_held, HELD_SECONDS, "the query's embedding request")

            async def lexical_running() -> bool:
                return await _fetchval(lib, WAITING_LEXICAL) is not None

            await wait_until(lexical_running, HELD_SECONDS, "the lexical statement, running")

        async def connection_let_go() -> bool:
            return await _fetchval(lib, LEXICAL_NOT_IDLE) == 0

        await wait_until(connection_let_go, HELD_SECONDS, "the lexical transaction, ended")
        assert not recall.done()  # the vector is still held, so the recall waits for it

        provider.set_mode("ok")
        found = await recall
        assert "advisory" not in found
        assert found["messages"][-1]["content"] == fact
