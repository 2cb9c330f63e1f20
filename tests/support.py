"""Helpers for end-to-end tests: the real app under uvicorn, official MCP clients."""

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
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import psutil
import uvicorn
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from service.app.factory import create_app
from service.cli.connections import server_config
from service.config import Settings
from service.memory import tenants
from service.memory.library import Library
from service.models import Caller, Permission
from tests.servers import pooling


@dataclasses.dataclass(frozen=True)
class Served:
    """A running service: its base URL and the library behind it (for setup)."""

    base_url: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"


@contextlib.asynccontextmanager
async def serve(
    settings: Settings,
    database_url: str,
    anonymous: Caller | None = None,
    *,
    public: bool = False,
) -> AsyncIterator[Served]:
    """Run the real application on an ephemeral loopback port until the block ends
    (``anonymous``: the caller of requests without a key, as with
    CPERSONA_ALLOW_UNAUTHENTICATED_HTTP).

    ``public`` sets CPERSONA_PUBLIC_URL to the served origin (the port is bound first so
    the URL is known before the app is built), which turns the built-in OAuth server on.
    """
    sockets: list[socket.socket] | None = None
    if public:
        # proto TCP: only then does asyncio set TCP_NODELAY on accepted sockets (with
        # proto 0 each answer waited ~40 ms for the client's delayed ACK)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listener.bind(("127.0.0.1", 0))
        sockets = [listener]
        origin = f"http://127.0.0.1:{listener.getsockname()[1]}"
        settings = dataclasses.replace(settings, public_url=origin)
    app = create_app(pooling.apply(settings), database_url, anonymous)
    server = uvicorn.Server(server_config(app, settings, host="127.0.0.1", port=0))
    task = asyncio.create_task(server.serve(sockets=sockets))
    deadline = asyncio.get_running_loop().time() + 30
    while not server.started:
        if task.done():
            task.result()
        assert asyncio.get_running_loop().time() < deadline, "the app did not start in 30 s"
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)
        for listener in sockets or []:
            listener.close()


async def new_tenant(
    lib: Library, slug: str, grants: dict[str, Permission] | None = None, tool_set: str = "all"
) -> str:
    """Create tenant ``slug`` and return a key for it (of tool set ``tool_set``)."""
    await tenants.create_tenant(lib.db, slug)
    return await tenants.create_key(
        lib.db, slug, label=f"{slug}-key", grants=grants, tool_set=tool_set
    )


@contextlib.asynccontextmanager
async def mcp_session(served: Served, key: str) -> AsyncIterator[ClientSession]:
    """An initialised official MCP client session authenticated with ``key``."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(served.mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def modern_client(served: Served, key: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK's ``Client`` (``mode="auto"`` probes ``server/discover``, the 2026-07-28
    revision; ``"legacy"`` runs the initialize handshake) authenticated with ``key``."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(served.mcp_url, http_client=http), mode=mode) as client,
    ):
        yield client


def body(result: types.CallToolResult) -> Any:
    """The JSON object of a tool result (its single text item)."""
    assert len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return json.loads(item.text)


def text(result: types.CallToolResult) -> str:
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


class Agent:
    """An MCP client of one tenant: every call opens its own official-SDK session.

    One session per call keeps each test's anyio scopes inside one task (pytest
    fixtures run setup and teardown in different tasks) and exercises the
    stateless server the way independent clients do.
    """

    def __init__(self, served: Served, key: str) -> None:
        self.served = served
        self.key = key

    async def raw(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        async with mcp_session(self.served, self.key) as session:
            return await session.call_tool(tool, arguments)

    async def call(self, tool: str, **arguments: Any) -> Any:
        """The JSON body of a tool result (fails the test on schema errors)."""
        result = await self.raw(tool, arguments)
        assert not result.is_error, text(result)
        return body(result)

    async def tool_names(self) -> list[str]:
        async with mcp_session(self.served, self.key) as session:
            return [tool.name for tool in (await session.list_tools()).tools]


class SessionAgent(Agent):
    """An MCP client whose requests carry ``X-CPersona-Session: <session>``."""

    def __init__(self, served: Served, key: str, session: str) -> None:
        super().__init__(served, key)
        self.session = session

    async def raw(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        headers = {"Authorization": f"Bearer {self.key}", "X-CPersona-Session": self.session}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(self.served.mcp_url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool(tool, arguments)


def stop_embedded_postmaster(data_dir: Path) -> None:
    """Stop the embedded Postgres a ``db url`` left running in ``data_dir`` (SIGTERM, as
    ``pg_ctl stop`` sends), and wait for it."""
    pid = int((data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    psutil.Process(pid).wait(timeout=30)


def run_cli(
    database_url: str | None, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m service ARGS`` against ``database_url``, without the caller's CPERSONA_*."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CPERSONA_")}
    environ.pop("DATABASE_URL", None)
    if database_url:
        environ["DATABASE_URL"] = database_url
    environ.update(pooling.cli_env(database_url))
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
        check=False,
    )
