"""What an ASGI app behind the edge sends through: the status override and the stall guard."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from starlette.types import Message

from service.app.ceiling import ResponseGuard
from service.app.exchange import Exchange, app_send
from service.config import Settings
from service.db.pool import Database
from service.mcp.request import RequestInfo
from service.memory.library import Library

START: Message = {"type": "http.response.start", "status": 200, "headers": []}
BODY: Message = {"type": "http.response.body", "body": b"{}", "more_body": False}


def _exchange(sink: list[Message], block: asyncio.Event | None = None) -> Exchange:
    settings = dataclasses.replace(Settings(), stream_stall_timeout=0.2)
    lib = Library(Database("postgresql://unused@127.0.0.1/none"), settings)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if block is not None:
            await block.wait()  # a client that never reads
        sink.append(message)

    guard = ResponseGuard(send, "rid", None, lambda size: b"")
    return Exchange({"type": "http", "headers": []}, receive, guard, lib, RequestInfo("rid"))


async def test_the_answer_takes_the_status_the_dispatcher_asked_for() -> None:
    sent: list[Message] = []
    exchange = _exchange(sent)
    exchange.info.status, exchange.info.retry_after = 503, 2.0
    send = app_send(exchange)
    await send(START)
    await send(BODY)
    assert sent[0]["status"] == 503
    assert (b"retry-after", b"2") in sent[0]["headers"]


async def test_a_client_that_never_reads_is_given_up_on_after_the_stall_timeout() -> None:
    sent: list[Message] = []
    exchange = _exchange(sent, block=asyncio.Event())
    send = app_send(exchange)
    started = time.monotonic()
    await asyncio.wait_for(send(START), 5)
    assert 0.15 < time.monotonic() - started < 2
    assert exchange.info.outcome == "client_stalled"
    started = time.monotonic()
    await asyncio.wait_for(send(BODY), 5)  # the rest is dropped at once
    assert time.monotonic() - started < 0.1
    assert sent == []
