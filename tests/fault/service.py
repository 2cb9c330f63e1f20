"""The real service for fault injection: ``python -m service serve`` as a subprocess.

Each :func:`running_service` starts ``serve`` on a free loopback port with a fresh data
directory (so its own embedded Postgres, which the tests may kill), reads the
first-start key it prints, and stops it (SIGTERM, then its Postgres) at the end.
Tenants and keys for a test are created straight in that Postgres through the
library (:meth:`Running.new_key`); requests go over HTTP, raw JSON-RPC, because these
tests assert statuses and headers the way a load balancer or a client sees them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import psutil

from service.db.pool import Database
from service.memory import tenants
from service.models import Permission

READY_SECONDS = 60.0
STOP_SECONDS = 30.0
SEED_SQL = (
    "INSERT INTO memories (tenant_id, agent_id, content) "
    "SELECT a.tenant_id, a.id, repeat('x', $2) || ' ' || n FROM agents a, generate_series(1, $3) n "
    "WHERE a.name = $1"
)
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class Running:
    """A running ``serve``: where it listens, its first key, its data and its log."""

    port: int
    key: str
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[str]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    def postmaster_pid(self) -> int:
        return int((self.pgdata / "postmaster.pid").read_text().split()[0])

    def database_url(self) -> str:
        """The admin URL of the embedded Postgres (its socket directory and port)."""
        lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
        return f"postgresql://postgres@/postgres?host={lines[4].strip()}&port={lines[3].strip()}"

    @contextlib.asynccontextmanager
    async def database(self) -> AsyncIterator[Database]:
        db = await Database(self.database_url(), min_size=1, max_size=2).open()
        try:
            yield db
        finally:
            await db.close()

    async def seed_large_agent(self, key: str, agent: str, rows: int, chars: int) -> None:
        """Give ``key``'s tenant an agent with ``rows`` memories of about ``chars`` characters
        (one stored over MCP to create the agent, the rest inserted in one statement)."""
        async with httpx.AsyncClient(timeout=30) as http:
            tool_body(
                await call(
                    http, self, key, "store", agent_id=agent, message={"content": f"{agent} starts"}
                )
            )
        async with self.database() as db, db.admin_tx() as conn:
            await conn.execute(SEED_SQL, agent, chars, rows)

    async def new_key(self, slug: str, grants: dict[str, Permission] | None = None) -> str:
        """A new tenant ``slug`` and a key for it."""
        async with self.database() as db:
            await tenants.create_tenant(db, slug)
            return await tenants.create_key(db, slug, label=f"{slug}-key", grants=grants)

    def log_lines(self) -> list[dict[str, Any]]:
        """The service's JSON log lines so far (other lines are skipped)."""
        lines = []
        for raw in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                lines.append(json.loads(raw))
        return lines


def _environment(data_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    environ.pop("DATABASE_URL", None)
    environ.update(
        CPERSONA_DATA_DIR=str(data_dir),
        CPERSONA_EMBEDDING_MODE="none",
        CPERSONA_LOG_FORMAT="json",
    )
    environ.update(env)
    return environ


def _wait_ready(running: Running) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        assert running.process.poll() is None, running.log_path.read_text()[-2000:]
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{running.base_url}/readyz", timeout=1).status_code == 200:
                return
        time.sleep(0.05)
    raise AssertionError(f"serve was not ready within {READY_SECONDS:.0f} s")


def _stop(running: Running) -> None:
    process = running.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_SECONDS)
    if process.stdout is not None:
        process.stdout.close()
    with contextlib.suppress(OSError, ValueError, psutil.Error):  # a Postgres left behind
        postmaster = psutil.Process(running.postmaster_pid())
        postmaster.send_signal(signal.SIGINT)
        postmaster.wait(timeout=STOP_SECONDS)


@contextlib.contextmanager
def running_service(data_dir: Path, env: Mapping[str, str] | None = None) -> Iterator[Running]:
    """``serve`` on an empty data directory with ``env`` until the block ends."""
    port = free_port()
    log_path = data_dir / "serve.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            text=True,
            env=_environment(data_dir, env or {}),
        )
    running = Running(port, "", data_dir, log_path, process)
    try:
        _wait_ready(running)
        assert process.stdout is not None
        printed = [process.stdout.readline() for _ in range(2)]
        running.key = printed[1].strip()
        assert running.key.startswith("cpk_"), printed
        yield running
    finally:
        _stop(running)


def mcp_head(key: str, length: int, first_bytes: str = "") -> str:
    """The head of a raw ``POST /mcp`` that declares ``length`` bytes and sends ``first_bytes``."""
    return (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {length}\r\n\r\n{first_bytes}"
    )


def tool_call(tool: str, arguments: dict[str, Any], rpc_id: int = 1) -> dict[str, Any]:
    """A JSON-RPC ``tools/call`` request."""
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": params}


async def call(
    http: httpx.AsyncClient, running: Running, key: str, tool: str, **arguments: Any
) -> httpx.Response:
    """POST one MCP ``tools/call`` (stateless, JSON answer) with ``key``."""
    headers = {**MCP_HEADERS, "authorization": f"Bearer {key}"}
    return await http.post(
        f"{running.base_url}/mcp", json=tool_call(tool, arguments), headers=headers
    )


def tool_body(response: httpx.Response) -> dict[str, Any]:
    """The JSON object a successful tool call answered (asserting it succeeded)."""
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is False, result
    body: dict[str, Any] = json.loads(result["content"][0]["text"])
    return body


async def open_raw(
    running: Running, head: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw connection that has sent the request head ``head`` (a client we control)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
    writer.write(head.encode())
    await writer.drain()
    return reader, writer


async def read_status(reader: asyncio.StreamReader, within: float) -> tuple[int, str]:
    """The status of a raw answer and its headers and body (``Content-Length`` bytes)."""

    async def read() -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return head + await reader.readexactly(length)

    data = await asyncio.wait_for(read(), within)
    status_line, _, rest = data.decode("latin-1").partition("\r\n")
    return int(status_line.split()[1]), rest


async def trickle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, every: float, limit: int
) -> tuple[int, str]:
    """Send a body one byte per ``every`` seconds until the server answers (at most
    ``limit`` bytes); the answer's status and the rest of it."""
    answer = b""
    for _ in range(limit):
        try:
            writer.write(b" ")
            await writer.drain()
        except ConnectionError:  # the server answered and closed the connection
            break
        with contextlib.suppress(TimeoutError):
            answer = await asyncio.wait_for(reader.read(65536), every)
            break
    with contextlib.suppress(ConnectionError, TimeoutError):
        answer += await asyncio.wait_for(reader.read(), 5)
    status_line, _, rest = answer.decode("latin-1").partition("\r\n")
    return int(status_line.split()[1]), rest


async def hang_up(writer: asyncio.StreamWriter) -> None:
    """Close a raw connection (the way a client that gives up does)."""
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
