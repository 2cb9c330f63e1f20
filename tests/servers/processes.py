"""The real service and its neighbours as processes on loopback: ports, ``serve``, stop.

Shared by the tests that run ``python -m service serve`` as a subprocess (three
replicas behind HAProxy: ``tests/e2e/test_replicas.py``), PgBouncer and HAProxy
(:mod:`tests.servers.proxies`) and the benchmarks (``bench/harness/serving.py`` builds
its tenants, keys and data directories on these). Nothing here imports the service's
code: a process is started in the repository, or in another ``cwd`` (a benchmark's code
snapshot).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.02


class ServerError(RuntimeError):
    """A server could not run: it failed to start, exited early, or is not installed.

    The benchmarks know it as ``BenchError`` (their command line turns it into a clean
    exit); a test lets it fail the test, or skips where a program is missing."""


@dataclasses.dataclass(frozen=True)
class ServiceOptions:
    """How to run the service: embedded Postgres (default) or an external database."""

    database_url: str | None = None
    extra_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    keep_data: bool = False

    @property
    def embedded(self) -> bool:
        """Whether the service runs on its embedded Postgres."""
        return self.database_url is None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def service_env(data_dir: Path, options: ServiceOptions) -> dict[str, str]:
    """The environment for service processes: no inherited CPERSONA_*/DATABASE_URL."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_") and k != "DATABASE_URL"
    }
    env["CPERSONA_DATA_DIR"] = str(data_dir)
    env["CPERSONA_LOG_FORMAT"] = "json"
    if options.database_url is not None:
        env["DATABASE_URL"] = options.database_url
    env.update(options.extra_env)
    return env


def spawn_serve(
    env: Mapping[str, str], port: int, log_path: Path, cwd: Path = REPO_ROOT
) -> subprocess.Popen[bytes]:
    """Start ``python -m service serve`` on 127.0.0.1:``port``; output goes to ``log_path``."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--host", LOOPBACK, "--port", str(port)],
            env=dict(env),
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def log_tail(log_path: Path, lines: int = 8) -> str:
    """The last lines of a service log, for error messages."""
    try:
        return " | ".join(log_path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_ready(
    base_url: str, process: subprocess.Popen[bytes], log_path: Path, timeout: float
) -> float:
    """Poll ``/readyz`` until 200; return the seconds waited. Fails if the process exits."""
    started = time.perf_counter()
    deadline = started + timeout
    with httpx.Client(timeout=2.0) as http:
        while time.perf_counter() < deadline:
            if process.poll() is not None:
                raise ServerError(f"serve exited with {process.returncode}: {log_tail(log_path)}")
            with contextlib.suppress(httpx.HTTPError):
                if http.get(f"{base_url}/readyz").status_code == 200:
                    return time.perf_counter() - started
            time.sleep(POLL_INTERVAL_S)
    raise ServerError(f"serve not ready after {timeout:.0f} s: {log_tail(log_path)}")


def postmaster_pid(pgdata: Path | None) -> int | None:
    """The PID of the embedded postmaster from ``postmaster.pid`` if it runs."""
    if pgdata is None:
        return None
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if psutil.pid_exists(pid) else None


def _stop_orphan_postgres(pgdata: Path | None) -> None:
    """Fast-shutdown an embedded postmaster left behind by a serve we had to kill."""
    pid = postmaster_pid(pgdata)
    if pid is None:
        return
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def stop_serve(process: subprocess.Popen[bytes], pgdata: Path | None) -> float:
    """SIGTERM the serve process and wait for it; return the seconds it took to exit.

    If it does not exit in time it is killed, and the embedded Postgres it
    started (found by its own ``postmaster.pid``) is shut down.
    """
    started = time.perf_counter()
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    _stop_orphan_postgres(pgdata)
    return elapsed
