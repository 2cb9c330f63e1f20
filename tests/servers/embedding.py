"""A real HTTP embedding server for tests: CPersona's wire format on a loopback port.

uvicorn serves it from its own thread and event loop, so the service under test talks
to it over real sockets. A test switches what it does:

- ``ok``: deterministic vectors of ``dimension`` components (``fake_vector``);
- ``fail``: HTTP 500 for every request;
- ``hang``: every request is held until the mode changes (then answered like the new
  mode) or 60 s pass, so only the client's timeout ends it;
- ``width``: vectors of ``wrong_dimension`` components (a provider that lies);
- ``down``: the listener is closed, connections are refused; any other mode reopens
  it on the same port.

Texts starting with ``!poison`` get HTTP 400 in every mode that answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Mode = Literal["ok", "fail", "hang", "width", "down"]
HANG_LIMIT_SECONDS = 60.0


def serve_in_thread(app: Starlette, port: int = 0) -> tuple[uvicorn.Server, threading.Thread, int]:
    """Serve ``app`` with uvicorn on 127.0.0.1:``port`` (0: any free port) from its own
    thread and event loop; the socket listens before this returns, so no readiness wait
    is needed. Stop it with :func:`stop_thread`."""
    # proto TCP: only then does asyncio set TCP_NODELAY on accepted sockets (with
    # proto 0 each answer waited ~40 ms for the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        ws="none",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)

    def run() -> None:
        asyncio.run(server.serve(sockets=[sock]))
        sock.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return server, thread, sock.getsockname()[1]


def stop_thread(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(timeout=10)
    assert not thread.is_alive(), "the server did not stop"


def fake_vector(text: str, dimension: int = 8) -> list[float]:
    """Deterministic and not unit length: the same text always gets the same vector."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i % 32]) - 127.5 + (i // 32) * 0.25 for i in range(dimension)]


@dataclasses.dataclass
class EmbeddingServer:
    """What the server does now, and the texts it saw and answered."""

    dimension: int = 8
    wrong_dimension: int = 17
    mode: Mode = "ok"
    delay: float = 0.0
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    """Texts embedded as another text is (a query that means what a passage says)."""
    received: list[str] = dataclasses.field(default_factory=list)
    answered: list[str] = dataclasses.field(default_factory=list)
    port: int = 0
    generation: int = 0
    """Bumped by :meth:`reset`: a request that arrived before it is not recorded when it
    is answered after it (a slow answer to an earlier test's request is not this one's)."""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/embed"

    def reset(self, *, failing: bool = False, delay: float = 0.0, mode: Mode | None = None) -> None:
        """Switch mode (``failing`` is ``fail``) and forget what was seen."""
        self.set_mode(mode or ("fail" if failing else "ok"))
        self.delay = delay
        self.generation += 1
        self.received.clear()
        self.answered.clear()
        self.aliases.clear()

    def set_mode(self, mode: Mode) -> None:
        if mode == "down" and self._server is not None:
            self._stop()
        self.mode = mode
        if mode != "down" and self._server is None:
            self._start()

    async def _endpoint(self, request: Request) -> Response:
        texts: list[str] = (await request.json())["texts"]
        generation = self.generation
        self.received.extend(texts)
        deadline = time.monotonic() + HANG_LIMIT_SECONDS
        # the mode is switched from the test's thread and loop: poll it (bounded)
        while self.mode == "hang" and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        if self.mode == "fail":
            return Response("embedding backend down", status_code=500)
        if self.delay:
            await asyncio.sleep(self.delay)
        if any(text.startswith("!poison") for text in texts):
            return Response("cannot embed that", status_code=400)
        width = self.wrong_dimension if self.mode == "width" else self.dimension
        if self.mode == "ok" and generation == self.generation:
            self.answered.extend(texts)
        return JSONResponse(
            {"embeddings": [fake_vector(self.aliases.get(text, text), width) for text in texts]}
        )

    def _start(self) -> None:
        app = Starlette(routes=[Route("/embed", self._endpoint, methods=["POST"])])
        self._server, self._thread, self.port = serve_in_thread(app, self.port)

    def _stop(self) -> None:
        assert self._server is not None
        assert self._thread is not None
        stop_thread(self._server, self._thread)
        self._server = self._thread = None

    def close(self) -> None:
        self.mode = "ok"  # releases held requests
        if self._server is not None:
            self._stop()


def running_server(dimension: int = 8) -> Iterator[EmbeddingServer]:
    """A started server (listening before this returns), closed at the end: a fixture body."""
    server = EmbeddingServer(dimension=dimension)
    server.set_mode("ok")
    try:
        yield server
    finally:
        server.close()
