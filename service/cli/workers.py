"""``serve --workers N``: N serving processes on one port, one embedded Postgres.

One Python process uses one core, so a host with more cores runs more processes. The
parent binds the listening socket and starts (and migrates) the embedded Postgres when
there is no ``DATABASE_URL``; then it spawns N workers that each run the application on
the inherited socket (the kernel hands each connection to one of the processes
accepting on it), against the same database URL. To a worker the embedded Postgres is
an external database: its pool reconnects with backoff on its own.

The parent is the only supervisor: it restarts the embedded postmaster when it dies
(only one process may, or two would start it at once), restarts a worker that exits
unexpectedly, and on SIGTERM or SIGINT asks every worker to stop (each finishes its
requests and its background work) before Postgres is stopped.

What runs once and what runs per process:

- the queue worker runs in worker 0 only (``CPERSONA_SERVE_WORKER`` is given to that
  one). Not an advisory lock, because a session lock needs a connection held for the
  life of the process, which a transaction-mode PgBouncer does not give; several
  hosts each running one is still safe (jobs are claimed with ``SKIP LOCKED``), and a
  worker 0 that dies is restarted by the parent.
- every worker runs its own embedding batcher and write-behind embedder (for the rows
  its requests wrote), its own lanes and per-key limits: each enforces
  ``1/(CPERSONA_REPLICAS * N)`` of the per-key rate (``replicas`` is scaled here).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess

import structlog
import uvicorn

from service.app.factory import create_app
from service.cli import connections
from service.config import Settings
from service.db.embedded import EmbeddedPostgres, RestartFailed
from service.logs import configure_logging, get_logger
from service.models import Caller

log = get_logger("service.cli")
SUPERVISE_SECONDS = 0.5
STOP_SECONDS = 30.0
RESTART_BACKOFF_MAX = 5.0
MAX_WORKERS = 1024


def worker_count(settings: Settings, requested: int | None) -> int:
    """``--workers``, else CPERSONA_WORKERS; 0 (auto) is the number of cores with an
    external database and 1 on the embedded one (a newcomer's laptop)."""
    count = settings.workers if requested is None else requested
    if count > 0:
        return count
    return (os.cpu_count() or 1) if not settings.uses_embedded_postgres else 1


def worker_settings(settings: Settings, url: str, index: int, count: int) -> Settings:
    """The settings of worker ``index`` of ``count``: the shared database URL, the queue
    worker in worker 0 only, and the per-key limits shared by every process."""
    return dataclasses.replace(
        settings,
        database_url=url,
        serve_worker=index == 0 and settings.runs_worker_in_serve,
        replicas=settings.replicas * count,
    )


def worker_number(raw: str) -> int:
    """``--workers``: 1..1024 (argparse prints the one-line usage error)."""
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"expected a number of workers 1-{MAX_WORKERS}, got {raw!r}"
        )
    return int(raw)


def run_worker(
    settings: Settings, anonymous: Caller | None, sock: socket.socket, index: int
) -> None:
    """A worker process: the application on the shared socket until SIGTERM."""
    configure_logging(settings)
    structlog.contextvars.bind_contextvars(worker=index)
    assert settings.database_url is not None
    app = create_app(settings, settings.database_url, anonymous)
    uvicorn.Server(connections.server_config(app, settings)).run(sockets=[sock])


@dataclasses.dataclass
class _Pool:
    """The worker processes, by index, and how to start one."""

    start: Callable[[int], BaseProcess]
    processes: dict[int, BaseProcess] = dataclasses.field(default_factory=dict)
    restarts: dict[int, float] = dataclasses.field(default_factory=dict)

    def replace_dead(self) -> None:
        """Start again a worker that exited (at most once per backoff interval)."""
        now = time.monotonic()
        for index, process in list(self.processes.items()):
            if process.is_alive() or now < self.restarts.get(index, 0.0):
                continue
            log.warning("worker_exited", worker=index, exitcode=process.exitcode)
            self.restarts[index] = now + RESTART_BACKOFF_MAX
            self.processes[index] = self.start(index)

    def stop(self) -> None:
        """SIGTERM every worker, wait for each (killed after STOP_SECONDS)."""
        for process in self.processes.values():
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for index, process in self.processes.items():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning("worker_killed", worker=index)
                process.kill()
                process.join(STOP_SECONDS)


def serve_workers(
    settings: Settings,
    url: str,
    anonymous: Caller | None,
    embedded: EmbeddedPostgres | None,
    count: int,
    sock: socket.socket,
) -> None:
    """Run ``count`` workers accepting on ``sock`` (bound and listening, inheritable)
    until SIGTERM/SIGINT; the caller closes ``sock``."""
    context = multiprocessing.get_context("spawn")

    def start(index: int) -> BaseProcess:
        args = (worker_settings(settings, url, index, count), anonymous, sock, index)
        process = context.Process(target=run_worker, args=args, name=f"cpersona-worker-{index}")
        process.start()
        return process

    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    pool = _Pool(start)
    try:
        pool.processes = {index: start(index) for index in range(count)}
        log.info("workers_started", workers=count, pids=[p.pid for p in pool.processes.values()])
        while not stopping.wait(SUPERVISE_SECONDS):
            if embedded is not None and not embedded.running():
                _restart_postgres(embedded, stopping)
            pool.replace_dead()
    finally:
        pool.stop()


def _restart_postgres(embedded: EmbeddedPostgres, stopping: threading.Event) -> None:
    """Start the embedded Postgres again (it recovers from its WAL), with backoff."""
    died = time.monotonic()
    log.warning("embedded_postgres_died", pgdata=str(embedded.pgdata))
    delay = SUPERVISE_SECONDS
    while not stopping.is_set():
        try:
            killed = embedded.restart()
        except RestartFailed as exc:
            log.warning("embedded_postgres_restart_failed", error=str(exc)[:300])
            stopping.wait(delay)
            delay = min(delay * 2, RESTART_BACKOFF_MAX)
            continue
        seconds = round(time.monotonic() - died, 2)
        log.info("embedded_postgres_restarted", seconds=seconds, killed_orphans=killed)
        return
