"""Three ``serve`` replicas on one database behind a real HAProxy (round robin).

The module starts three ``python -m service serve`` processes on loopback ports against
one fresh test database (through the suite's PgBouncer when there is one), sharing
``CPERSONA_SIGNING_KEY`` and the export directory, each draining the embedding queue
(``CPERSONA_SERVE_WORKER``) with a real HTTP embedding server the test runs
(``tests/servers/embedding.py``). HAProxy,
with a configuration written here, health-checks ``/readyz`` and names the replica
that answered in ``X-CPersona-Replica``; every assertion below goes through the load
balancer and checks that the requests landed on all three replicas.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from service.db.pool import Database
from service.memory import tenants
from tests.app.test_edge import INIT
from tests.servers import installed_or_skip, pooling
from tests.servers.embedding import EmbeddingServer
from tests.servers.postgres import admin_execute, with_database
from tests.servers.processes import (
    ServiceOptions,
    free_port,
    service_env,
    spawn_serve,
    stop_serve,
    wait_ready,
)
from tests.servers.proxies import REPLICA_HEADER, HAProxy, PgBouncer, haproxy
from tests.servers.waiting import eventually
from tests.support import body, run_cli

REPLICAS = 3
QUEUED_ROWS = 30
CALIBRATION_FACTS = (  # calibration needs 10 embedded memories of the agent
    "Planted six tomato seedlings along the south fence.",
    "The telescope on the balcony shows Jupiter's moons.",
    "Fresh pasta dough needs eggs and flour.",
    "The car needs an oil change every ten thousand kilometres.",
    "Refactored the parser to use dataclasses.",
    "Hiked to the mountain lake with a heavy backpack.",
    "Booked the annual inspection at the garage for Tuesday.",
    "Saturn's rings were visible after midnight.",
    "The risotto leftovers became crispy rice balls.",
    "Fixed an off-by-one bug in the pagination code.",
    "Saw chamois grazing on the alpine meadow.",
    "Watered the tomato plants every morning in the heat.",
)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The load balancer, the tenant's key, the database and each replica's log."""

    lb: HAProxy
    key: str
    database_url: str
    logs: tuple[Path, ...]
    embedder: EmbeddingServer


def _env(data_dir: Path, database_url: str, embed_url: str) -> dict[str, str]:
    env = service_env(data_dir, ServiceOptions(database_url=database_url))
    env.update(pooling.cli_env(database_url))
    env.update(
        {
            "CPERSONA_SIGNING_KEY": "replicas-share-this-signing-key-" + "x" * 8,
            "CPERSONA_EXPORT_DIR": str(data_dir.parent / "exports"),
            "CPERSONA_EMBEDDING_MODE": "http",
            "CPERSONA_EMBEDDING_URL": embed_url,
            "CPERSONA_EMBEDDING_MODEL": "fake-8d",
            "CPERSONA_EMBEDDING_DIMENSIONS": "8",
            "CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS": "0",  # every row goes through the queue
            "CPERSONA_SERVE_WORKER": "true",
            "CPERSONA_WORKER_POLL_SECS": "0.05",
            "CPERSONA_WORKER_BATCH": "2",
            "CPERSONA_DB_POOL_MAX": "4",
        }
    )
    return env


def _new_key(database_url: str) -> str:
    async def create() -> str:
        db = await Database(pooling.direct_url(database_url), max_size=1).open()
        try:
            await tenants.create_tenant(db, "acme")
            return await tenants.create_key(db, "acme", label="lb")
        finally:
            await db.close()

    return asyncio.run(create())


@contextlib.contextmanager
def _database(admin_url: str, template: str, pooler: PgBouncer | None) -> Iterator[str]:
    """A fresh migrated database for the module, as the replicas reach it."""
    name = f"cpt_lb_{uuid.uuid4().hex[:10]}"
    asyncio.run(admin_execute(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    direct = with_database(admin_url, name)
    url = direct if pooler is None else pooler.url(name)
    if pooler is not None:
        pooling.register(url, direct)
    try:
        yield url
    finally:
        pooling.forget(url)
        asyncio.run(admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def cluster(
    admin_url: str,
    template_db: str,
    pooler: PgBouncer | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    installed_or_skip("haproxy")
    root = Path(tmp_path_factory.mktemp("replicas"))
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(_database(admin_url, template_db, pooler))
        embedder = EmbeddingServer(dimension=8)
        embedder.set_mode("ok")
        stack.callback(embedder.close)
        key = _new_key(url)
        ports = [free_port() for _ in range(REPLICAS)]
        logs = [root / f"replica-{n}.log" for n in range(1, REPLICAS + 1)]
        processes = []
        for n, (port, log) in enumerate(zip(ports, logs, strict=True), start=1):
            env = _env(root / f"replica-{n}", url, embedder.url)
            processes.append(spawn_serve(env, port, log))
            stack.callback(stop_serve, processes[-1], None)
        for port, process, log in zip(ports, processes, logs, strict=True):
            wait_ready(f"http://127.0.0.1:{port}", process, log, 60)
        lb = stack.enter_context(haproxy(ports, root / "haproxy"))
        lb.wait_all_up()
        yield Cluster(lb, key, url, tuple(logs), embedder)


class Client:
    """One MCP session through the load balancer that notes which replica answered
    each tool call (HAProxy balances every request, so successive calls rotate)."""

    def __init__(self, session: ClientSession, served_by: list[str]) -> None:
        self._session = session
        self._served_by = served_by

    async def call(self, tool: str, **arguments: Any) -> tuple[Any, str]:
        result = await self._session.call_tool(tool, arguments)
        assert not result.is_error, result
        return body(result), self._served_by[-1]

    async def everywhere(self, tool: str, **arguments: Any) -> list[Any]:
        """Call until every replica has answered once (round robin: about one call each;
        the SDK's own requests may skip one); the bodies of those calls."""
        answered: dict[str, Any] = {}
        for _ in range(4 * REPLICAS):
            answer, replica = await self.call(tool, **arguments)
            answered.setdefault(replica, answer)
            if len(answered) == REPLICAS:
                return list(answered.values())
        raise AssertionError(f"{tool} reached only {sorted(answered)}")


@contextlib.asynccontextmanager
async def client(cluster: Cluster, key: str | None = None) -> AsyncIterator[Client]:
    served_by: list[str] = []

    async def note(response: httpx2.Response) -> None:
        if b'"tools/call"' in response.request.content:
            served_by.append(response.headers[REPLICA_HEADER])

    headers = {"Authorization": f"Bearer {key or cluster.key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [note]}) as http,
        streamable_http_client(f"{cluster.lb.base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield Client(session, served_by)


def cluster_names() -> tuple[str, ...]:
    return tuple(f"r{n}" for n in range(1, REPLICAS + 1))


async def test_haproxy_spreads_the_calls_of_one_client_over_every_replica(
    cluster: Cluster,
) -> None:
    assert cluster.lb.server_states() == dict.fromkeys(cluster_names(), "UP")
    async with client(cluster) as lb:
        answers = [await lb.call("persistence_status") for _ in range(4 * REPLICAS)]
    replicas = collections.Counter(replica for _, replica in answers)
    assert set(replicas) == set(cluster_names())
    assert max(replicas.values()) - min(replicas.values()) <= 2  # round robin, not affinity


async def test_a_pause_set_through_one_replica_holds_on_all_at_once(cluster: Cluster) -> None:
    async with client(cluster) as lb:
        paused, by = await lb.call("pause_persistence", ttl_seconds=120)
        assert paused["paused"] is True
        try:
            stores = await lb.everywhere("store", agent_id="p", message={"content": "paused"})
            statuses = await lb.everywhere("persistence_status")
        finally:
            resumed, _ = await lb.call("resume_persistence")
        stored, _ = await lb.call("store", agent_id="p", message={"content": "after resume"})
    assert all(answer["persisted"] is False for answer in stores)
    assert all(status["paused"] is True for status in statuses)
    assert resumed["was_active"] is True
    assert stored["result"] == "stored"
    assert by in cluster_names()


async def _on_every_replica(
    request: Callable[[], Awaitable[httpx.Response]],
) -> list[httpx.Response]:
    """Repeat a plain request until every replica has answered it; every response."""
    responses: list[httpx.Response] = []
    while {r.headers[REPLICA_HEADER] for r in responses} != set(cluster_names()):
        assert len(responses) < 4 * REPLICAS, [r.headers[REPLICA_HEADER] for r in responses]
        responses.append(await request())
    return responses


async def _initialize(cluster: Cluster, key: str) -> httpx.Response:
    """One bare ``initialize`` POST through the load balancer: status and replica."""
    headers = {
        "authorization": f"Bearer {key}",
        "accept": "application/json, text/event-stream",
    }
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(f"{cluster.lb.base_url}/mcp", json=INIT, headers=headers)


async def test_a_key_revoked_through_the_cli_is_refused_by_every_replica_next(
    cluster: Cluster,
) -> None:
    created = run_cli(cluster.database_url, "key", "create", "--tenant", "acme")
    assert created.returncode == 0, created.stderr
    key = created.stdout.split()[-1]
    before = await _on_every_replica(lambda: _initialize(cluster, key))
    revoked = run_cli(cluster.database_url, "key", "revoke", key[:16])
    assert revoked.returncode == 0, revoked.stderr
    after = await _on_every_replica(lambda: _initialize(cluster, key))
    assert {response.status_code for response in before} == {200}
    assert {response.status_code for response in after} == {401}  # from the first request on


def _embedded_per_replica(logs: tuple[Path, ...]) -> list[int]:
    """Rows each replica's worker embedded, from its ``embedding batch`` log lines."""
    counts = []
    for log in logs:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        counts.append(sum(e.get("embedded", 0) for e in lines if e["event"] == "embedding batch"))
    return counts


async def _pending(lb: Client) -> int:
    status, _ = await lb.call("get_queue_status")
    return int(status["pending"])


async def test_replicas_draining_the_queue_embed_every_row_exactly_once(
    cluster: Cluster,
) -> None:
    before = _embedded_per_replica(cluster.logs)
    cluster.embedder.reset(delay=0.02)  # slow enough that every worker gets batches
    texts = [f"queued row {n}: {secrets.token_hex(4)}" for n in range(QUEUED_ROWS)]
    async with client(cluster) as lb:
        stores = [await lb.call("store", agent_id="q", message={"content": t}) for t in texts]
        assert all(answer["embedded"] is False for answer, _ in stores)
        await eventually(lambda: _pending(lb), lambda n: n == 0, within=30, what="queue drained")
    after = _embedded_per_replica(cluster.logs)
    per_replica = [b - a for a, b in zip(before, after, strict=True)]
    answered = cluster.embedder.answered
    embedded = collections.Counter(text for text in answered if text in set(texts))
    assert embedded == dict.fromkeys(texts, 1)  # every row once, none twice
    assert sum(per_replica) == QUEUED_ROWS
    assert sum(1 for count in per_replica if count) >= 2, per_replica  # drained by several


async def test_calibration_and_precision_set_through_one_replica_are_used_by_all(
    cluster: Cluster,
) -> None:
    cluster.embedder.reset()
    async with client(cluster) as lb:
        for fact in CALIBRATION_FACTS:
            await lb.call("store", agent_id="cal", message={"content": fact})
        await eventually(lambda: _pending(lb), lambda n: n == 0, within=30, what="queue drained")
        chosen, set_by = await lb.call("set_recall_precision", agent_id="cal", precision="lenient")
        assert chosen["ok"] is True, chosen
        read = await lb.everywhere("get_recall_precision", agent_id="cal")
        recalls = await lb.everywhere("recall", agent_id="cal", query="tomato seedlings", deep=True)
        threshold, by = chosen["calibrate"]["new_threshold"], set_by
        for _ in range(4 * REPLICAS):  # until a calibration runs on another replica ...
            again, again_by = await lb.call("calibrate_threshold", agent_id="cal")
            assert again["old_threshold"] == threshold  # ... each sees the one before it
            if again_by != by:
                break
            threshold = again["new_threshold"]
    assert {(r["precision"], r["beta"], r["overridden"]) for r in read} == {("lenient", 0.5, True)}
    assert again_by != by
    assert all(recall["messages"] == recalls[0]["messages"] for recall in recalls)
    assert recalls[0]["messages"]


async def test_a_download_url_signed_by_one_replica_downloads_from_every_other(
    cluster: Cluster,
) -> None:
    async with client(cluster) as lb:
        await lb.call("store", agent_id="x", message={"content": "exported through the LB"})
        exported, signed_by = await lb.call(
            "export_memories", agent_id="x", output_path="replicas.jsonl"
        )
    url = cluster.lb.base_url + exported["download_url"]
    headers = {"authorization": f"Bearer {cluster.key}"}
    async with httpx.AsyncClient(timeout=30) as http:
        downloads = await _on_every_replica(lambda: http.get(url, headers=headers))
    assert signed_by in cluster_names()
    assert {response.status_code for response in downloads} == {200}
    assert len({response.content for response in downloads}) == 1
    assert b"exported through the LB" in downloads[0].content
