"""A loopback TCP proxy in front of the test Postgres: an "external database" to cut.

``cut()`` closes every connection through it and refuses new ones, as a database
that crashed or a network that failed does; ``restore()`` accepts again on the same
port. The service under test connects to :attr:`DatabaseProxy.url` as it would to
any external ``DATABASE_URL``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit


class DatabaseProxy:
    """Forwards 127.0.0.1:<port> to the database of ``target_url`` (socket or TCP)."""

    def __init__(self, target_url: str) -> None:
        parts = urlsplit(target_url)
        socket_dir = parse_qs(parts.query).get("host", [""])[0]
        self._unix = f"{socket_dir}/.s.PGSQL.{parts.port or 5432}" if socket_dir else None
        self._tcp = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._database = parts.path.lstrip("/")
        self._user = parts.username or "postgres"
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"postgresql://{self._user}@127.0.0.1:{self.port}/{self._database}"

    async def restore(self) -> None:
        """Accept connections (again, on the same port)."""
        self._server = await asyncio.start_server(
            self._forward, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Drop every connection and refuse new ones."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._pipes):
            writer.transport.abort()
        self._pipes.clear()

    async def _forward(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        if self._unix is not None:
            server_r, server_w = await asyncio.open_unix_connection(self._unix)
        else:
            server_r, server_w = await asyncio.open_connection(*self._tcp)
        self._pipes |= {client_w, server_w}
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))
        self._pipes -= {client_w, server_w}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()


@contextlib.asynccontextmanager
async def database_proxy(target_url: str) -> AsyncIterator[DatabaseProxy]:
    proxy = DatabaseProxy(target_url)
    await proxy.restore()
    try:
        yield proxy
    finally:
        await proxy.cut()
