"""The real service for a benchmark: a data directory, a tenant and key, ``serve``.

Everything is measured through the path a client uses: ``python -m service serve``
in its own process, MCP streamable HTTP on 127.0.0.1 (:mod:`bench.harness.client`). Nothing
here imports the service's code. Processes start in the repository by default, or in
a code snapshot (:mod:`bench.harness.snapshot`) when a benchmark passes ``cwd``. Starting,
waiting for and stopping a process is :mod:`tests.servers.processes`, which the tests
that run ``serve`` use too; its names are re-exported here for the benchmarks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.servers.processes import (
    LOOPBACK,
    READY_TIMEOUT_S,
    REPO_ROOT,
    ServerError,
    ServiceOptions,
    free_port,
    log_tail,
    postmaster_pid,
    service_env,
    spawn_serve,
    stop_serve,
    wait_ready,
)

__all__ = [
    "LOOPBACK",
    "READY_TIMEOUT_S",
    "REPO_ROOT",
    "BenchError",
    "Service",
    "ServiceOptions",
    "free_port",
    "fresh_tenant",
    "log_tail",
    "new_key",
    "postmaster_pid",
    "run_cli",
    "running_service",
    "scratch_dir",
    "serve_on",
    "service_env",
    "serving",
    "spawn_serve",
    "stop_serve",
    "wait_ready",
]

CLI_TIMEOUT_S = 180.0

BenchError = ServerError
"""The benchmark could not run (the service failed to start, a CLI call failed, ...)."""


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


SETTLE_TIMEOUT_S = 1800.0
"""How long :func:`settle` may take: the passage backfill of 100,000 bulk-loaded rows reads
them in batches of 500 and measures every long one with the tokenizer."""


def settle(env: Mapping[str, str], *, cwd: Path = REPO_ROOT) -> str:
    """Finish a bulk-loaded database's embedding backlog and passage backfill with the
    CLI's ``reembed`` of the code at ``cwd`` (what an operator runs after a bulk load or
    an upgrade, docs/deployment.md), which ends with ``VACUUM (ANALYZE)`` of the tables it
    rewrote; returns what it printed.

    A benchmark measures the service it serves in its steady state. Otherwise the queue
    worker's first sweep marks the loaded long rows while the measured calls run, and
    each mark leaves a dead row version behind in every index of ``memories`` until a
    vacuum: at 10,000 LoCoMo turns about 1,200 marks made recall's lexical statement
    cost 4.0 ms instead of 2.5 (docs/benchmarks/reconstruct.md, "`recall` against before
    the tier"). Code without passages has nothing to backfill; code with passages whose
    ``reembed`` did not yet vacuum (before 2026-12-05's second stop) keeps its marks'
    dead versions, so compare against it with care."""
    return run_cli(["reembed"], env, cwd=cwd, timeout=SETTLE_TIMEOUT_S)


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
def migrated_postgres() -> Iterator[str]:
    """A scratch embedded Postgres migrated to head, for the library-level benches that
    time statements without a served process; yields its URL, and stops and removes it.

    The service is imported here, not with this module: a bench that imports the service
    from its snapshot (``bench.harness.snapshot.use_snapshot``) must be the first to."""
    from service.db import migrate
    from service.db.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedPostgres(Path(data))
        url = server.start()
        try:
            migrate.upgrade(url)
            yield url
        finally:
            server.stop()


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
