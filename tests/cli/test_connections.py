"""The serving process's connections, measured with real sockets against the real app
under the configuration ``serve`` uses (:func:`service.cli.connections.server_config`):
the request-head deadline, the idle keep-alive bound and the per-address cap."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from urllib.parse import urlsplit

from service.config import Settings
from tests.support import Served, serve

HEAD = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n"


def _quick(settings: Settings, **changes: object) -> Settings:
    bounds: dict[str, object] = {"http_header_timeout": 1.0, "http_keepalive_timeout": 1}
    return dataclasses.replace(settings, **{**bounds, **changes})  # type: ignore[arg-type]


async def _connect(served: Served) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    parts = urlsplit(served.base_url)
    assert parts.hostname is not None
    assert parts.port is not None
    return await asyncio.open_connection(parts.hostname, parts.port)


async def _until_closed(reader: asyncio.StreamReader, within: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and the seconds that took (fails the
    test when the connection is still open after ``within``)."""
    started = time.monotonic()
    received = await asyncio.wait_for(reader.read(), within)
    return received, time.monotonic() - started


async def _trickle(writer: asyncio.StreamWriter, stop: asyncio.Event) -> None:
    """One header line every 0.2 s: a head that never ends."""
    with_pad = 0
    while not stop.is_set() and not writer.is_closing():
        writer.write(b"x-pad-%d: a\r\n" % with_pad)
        with_pad += 1
        try:
            await writer.drain()
        except ConnectionError:
            return
        await asyncio.sleep(0.2)


async def _trickled_until_closed(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[bytes, float]:
    stop = asyncio.Event()
    trickling = asyncio.create_task(_trickle(writer, stop))
    try:
        return await _until_closed(reader, 5.0)
    finally:
        stop.set()
        await trickling


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(
    settings: Settings, database_url: str
) -> None:
    async with serve(_quick(settings), database_url) as served:
        reader, writer = await _connect(served)
        received, seconds = await _until_closed(reader, 5.0)
        writer.close()
    assert received == b""
    assert 0.8 <= seconds <= 3.0


async def test_a_request_head_that_trickles_in_gets_408_and_is_closed(
    settings: Settings, database_url: str
) -> None:
    async with serve(_quick(settings), database_url) as served:
        reader, writer = await _connect(served)
        writer.write(HEAD)
        received, seconds = await _trickled_until_closed(reader, writer)
        writer.close()
    assert received.startswith(b"HTTP/1.1 408 ")
    assert b"request line and headers not received within 1 s" in received
    assert seconds <= 3.0


async def test_a_kept_alive_connection_is_closed_when_idle_or_when_its_next_head_trickles(
    settings: Settings, database_url: str
) -> None:
    async with serve(_quick(settings, http_header_timeout=2.0), database_url) as served:
        reader, writer = await _connect(served)
        writer.write(HEAD + b"\r\n")
        answer = await asyncio.wait_for(reader.readuntil(b"}"), 5.0)
        idle, idle_seconds = await _until_closed(reader, 5.0)
        writer.close()
        reader, writer = await _connect(served)
        writer.write(HEAD + b"\r\n")
        await asyncio.wait_for(reader.readuntil(b"}"), 5.0)
        writer.write(HEAD)
        trickled, trickled_seconds = await _trickled_until_closed(reader, writer)
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert (idle, idle_seconds <= 2.5) == (b"", True)
    assert trickled.startswith(b"HTTP/1.1 408 ")
    assert trickled_seconds <= 4.0


async def test_one_address_over_its_connection_cap_gets_429_until_one_closes(
    settings: Settings, database_url: str
) -> None:
    capped = _quick(settings, http_header_timeout=10.0, http_max_connections_per_address=3)
    async with serve(capped, database_url) as served:
        held = [await _connect(served) for _ in range(3)]
        reader, writer = await _connect(served)
        refused, seconds = await _until_closed(reader, 5.0)
        writer.close()
        held[0][1].close()
        await held[0][1].wait_closed()
        await asyncio.sleep(0.2)
        reader, writer = await _connect(served)
        writer.write(HEAD + b"connection: close\r\n\r\n")
        admitted, _ = await _until_closed(reader, 5.0)
        writer.close()
        for _, other in held[1:]:
            other.close()
    assert refused.startswith(b"HTTP/1.1 429 ")
    assert b"retry-after: 1\r\n" in refused
    assert b'"reason": "too_many_connections"' in refused
    assert seconds < 1.0
    assert admitted.startswith(b"HTTP/1.1 200 ")


async def test_a_configured_proxy_is_not_held_to_the_per_address_cap(
    settings: Settings, database_url: str
) -> None:
    proxied = _quick(
        settings,
        http_header_timeout=10.0,
        http_max_connections_per_address=1,
        forwarded_allow_ips=("127.0.0.1",),
    )
    async with serve(proxied, database_url) as served:
        held = [await _connect(served) for _ in range(3)]
        answers = []
        for reader, writer in held:
            writer.write(HEAD + b"connection: close\r\n\r\n")
            answers.append((await _until_closed(reader, 5.0))[0])
            writer.close()
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)
