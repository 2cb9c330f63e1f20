"""A real HTTP embedding server (uvicorn on 127.0.0.1, its own thread) whose answers
the test controls and whose calls it counts.

It speaks the service's ``http`` embedding mode (``POST {"texts": [...]}`` ->
``{"embeddings": [...]}``) with deterministic 8-dimensional vectors. It can be switched
to answer 500 (``failing``), to answer slowly (``delay``), and it refuses texts that
start with ``!poison``, so the provider really is down, slow or picky. ``received``
lists every text asked for, ``answered`` every text embedded, in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import socket
import threading
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclasses.dataclass
class FakeEmbedder:
    """What the fake server does now, and what it saw."""

    failing: bool = False
    delay: float = 0.0
    received: list[str] = dataclasses.field(default_factory=list)
    answered: list[str] = dataclasses.field(default_factory=list)

    def reset(self, *, failing: bool = False, delay: float = 0.0) -> None:
        self.failing, self.delay = failing, delay
        self.received.clear()
        self.answered.clear()


def fake_vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i]) - 127.5 for i in range(8)]


def embedding_app(fake: FakeEmbedder) -> Starlette:
    async def embed_endpoint(request: Request) -> Response:
        texts: list[str] = (await request.json())["texts"]
        fake.received.extend(texts)
        if fake.failing:
            return Response("embedding backend down", status_code=500)
        if fake.delay:
            await asyncio.sleep(fake.delay)
        if any(text.startswith("!poison") for text in texts):
            return Response("cannot embed that", status_code=400)
        fake.answered.extend(texts)
        return JSONResponse({"embeddings": [fake_vector(text) for text in texts]})

    return Starlette(routes=[Route("/embed", embed_endpoint, methods=["POST"])])


@contextlib.contextmanager
def serve_in_thread(app: Starlette) -> Iterator[str]:
    """A real uvicorn server for ``app`` on an ephemeral 127.0.0.1 port, in its own
    thread and event loop, until the block ends; yields its base URL. The socket
    listens before the thread starts, so no readiness wait is needed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        ws="none",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    assert not thread.is_alive()


@contextlib.contextmanager
def embedding_server(fake: FakeEmbedder) -> Iterator[str]:
    """Serve ``fake`` until the block ends; yields the endpoint URL."""
    with serve_in_thread(embedding_app(fake)) as base_url:
        yield f"{base_url}/embed"
