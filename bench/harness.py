"""The real service as subprocesses: CLI calls, ``serve`` on loopback, start and stop.

Everything is measured through the path a client uses: ``python -m service serve``
in its own process, MCP streamable HTTP on 127.0.0.1 (:mod:`bench.client`). Nothing
here imports the service's code. Processes start in the repository by default, or in
a code snapshot (:mod:`bench.snapshot`) when a benchmark passes ``cwd``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
CLI_TIMEOUT_S = 180.0
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.02


class BenchError(RuntimeError):
    """The benchmark could not run (the service failed to start, a CLI call failed, ...)."""


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


@dataclasses.dataclass
class Service:
    """A running ``serve`` process and what a client needs to talk to it."""

    base_url: str
    key: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path
    start_seconds: float

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint."""
        return f"{self.base_url}/mcp"

    @property
    def pgdata(self) -> Path | None:
        """The embedded Postgres data directory, when one is used."""
        path = self.data_dir / "pgdata"
        return path if path.is_dir() else None


# --------------------------------------------------------------------------- CLI


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


def run_cli(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path = REPO_ROOT,
    timeout: float = CLI_TIMEOUT_S,
) -> str:
    """Run ``python -m service ARGS`` in ``cwd``; its stdout, or BenchError with stderr."""
    command = [sys.executable, "-m", "service", *args]
    try:
        done = subprocess.run(
            command,
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"`{' '.join(args)}` did not finish in {timeout:.0f} s") from exc
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        raise BenchError(f"`{' '.join(args)}` failed ({done.returncode}): {' | '.join(tail)}")
    return done.stdout


def new_key(
    env: Mapping[str, str], slug: str, *, create_tenant: bool, cwd: Path = REPO_ROOT
) -> str:
    """A read-write key for tenant ``slug`` (created first when asked), from the CLI."""
    if create_tenant:
        run_cli(["tenant", "create", slug, "--name", "Benchmark"], env, cwd=cwd)
    printed = run_cli(["key", "create", "--tenant", slug], env, cwd=cwd)
    keys = [word for word in printed.split() if word.startswith("cpk_")]
    if not keys:
        raise BenchError(f"`key create --tenant {slug}` printed no key")
    return keys[-1]


# --------------------------------------------------------------------------- serve


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
                raise BenchError(f"serve exited with {process.returncode}: {log_tail(log_path)}")
            with contextlib.suppress(httpx.HTTPError):
                if http.get(f"{base_url}/readyz").status_code == 200:
                    return time.perf_counter() - started
            time.sleep(POLL_INTERVAL_S)
    raise BenchError(f"serve not ready after {timeout:.0f} s: {log_tail(log_path)}")


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


@contextlib.contextmanager
def scratch_dir(keep: bool = False) -> Iterator[Path]:
    """A fresh temporary directory, removed afterwards unless ``keep``."""
    path = Path(tempfile.mkdtemp(prefix="cpersona-bench-"))
    try:
        yield path
    finally:
        if keep:
            print(f"kept data directory {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def serving(
    env: Mapping[str, str],
    data_dir: Path,
    key: str,
    *,
    cwd: Path = REPO_ROOT,
    log_name: str = "serve.log",
    stop_postgres: bool = True,
) -> Iterator[Service]:
    """``serve`` on a free port of an initialised data directory until the block ends.

    The block runs once ``/readyz`` is 200. With ``stop_postgres`` false an embedded
    Postgres is left to whoever else holds it (a bulk loader keeps its own handle).
    """
    port = free_port()
    log_path = data_dir / log_name
    process = spawn_serve(env, port, log_path, cwd)
    base_url = f"http://{LOOPBACK}:{port}"
    service = Service(base_url, key, process, data_dir, log_path, 0.0)
    try:
        service.start_seconds = wait_ready(base_url, process, log_path, READY_TIMEOUT_S)
        yield service
    finally:
        stop_serve(process, data_dir / "pgdata" if stop_postgres else None)


@contextlib.contextmanager
def serve_on(
    code: Path,
    data_dir: Path,
    key: str,
    extra_env: Mapping[str, str],
    *,
    stop_postgres: bool = True,
) -> Iterator[Service]:
    """``serve`` from the code snapshot ``code`` on an existing data directory."""
    env = service_env(data_dir, ServiceOptions(extra_env=dict(extra_env)))
    log_name = f"serve-{time.time_ns()}.log"
    with serving(
        env, data_dir, key, cwd=code, log_name=log_name, stop_postgres=stop_postgres
    ) as service:
        yield service


@contextlib.contextmanager
def fresh_tenant(
    code: Path, slug: str, extra_env: Mapping[str, str], *, keep: bool = False
) -> Iterator[tuple[Path, str]]:
    """A fresh data directory (removed afterwards unless ``keep``) whose database the
    snapshot's CLI initialised with tenant ``slug``; yields the directory and a key."""
    with scratch_dir(keep) as data_dir:
        env = service_env(data_dir, ServiceOptions(extra_env=dict(extra_env)))
        yield data_dir, new_key(env, slug, create_tenant=True, cwd=code)


def _prepare_database(env: Mapping[str, str], options: ServiceOptions) -> str:
    """Migrate an external database if needed, create the tenant and key; return the key."""
    if options.embedded:
        return new_key(env, "bench", create_tenant=True)
    run_cli(["migrate"], env)
    return new_key(env, f"bench-{os.getpid()}-{int(time.time())}", create_tenant=True)


@contextlib.contextmanager
def running_service(options: ServiceOptions) -> Iterator[Service]:
    """The real service with a fresh tenant ``bench`` and its key; stopped at the end.

    The CLI creates the tenant and key first (with the embedded database it
    initialises, migrates and stops Postgres in the fresh data directory), then
    ``serve`` starts on a free port and the block runs once ``/readyz`` is 200.
    """
    with scratch_dir(options.keep_data) as data_dir:
        env = service_env(data_dir, options)
        key = _prepare_database(env, options)
        with serving(env, data_dir, key) as service:
            yield service
