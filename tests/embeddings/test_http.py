from __future__ import annotations

import hashlib
import math
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from service.embeddings.base import EmbeddingError, l2_normalise
from service.embeddings.http import HttpEmbeddingProvider
from tests.servers.embedding import serve_in_thread, stop_thread

API_KEY = "sk-test-key"
MODEL = "test-embedder"
GOOD = "[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]"
RAW_NAN = '{"embeddings": [[NaN, 1, 1, 1, 1, 1, 1, 1], ' + GOOD + "]}"
RAW_INF = '{"embeddings": [' + GOOD + ", [1e999, 1, 1, 1, 1, 1, 1, 1]]}"


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately not unit-length; `dim:N ...` texts get N components."""
    dimension = int(text.split()[0][4:]) if text.startswith("dim:") else 8
    digest = hashlib.sha256(text.encode()).digest()
    return [3.0 * (digest[index % 32] - 127.5) for index in range(dimension)]


def garbage(trigger: str) -> Response | None:
    """A broken answer for texts starting with `!`, else None."""
    answers: dict[str, Response] = {
        "!500": Response("boom", status_code=500),
        "!redirect": Response(status_code=302, headers={"location": "/elsewhere"}),
        "!notjson": Response("<html>oops</html>", media_type="text/html"),
        "!nan": Response(RAW_NAN, media_type="application/json"),
        "!inf": Response(RAW_INF, media_type="application/json"),
        "!list": JSONResponse([[1.0] * 8]),
        "!strings": JSONResponse({"embeddings": [["1.0"] * 8]}),
        "!bools": JSONResponse({"embeddings": [[True] * 8]}),
        "!zero": JSONResponse({"embeddings": [[1.0] * 8, [0.0] * 8]}),
        "!short": JSONResponse({"embeddings": []}),
        "!ragged": JSONResponse({"embeddings": [[1.0] * 8, [1.0] * 7]}),
        "!dupindex": JSONResponse({"data": [{"embedding": [1.0] * 8, "index": 0}] * 2}),
        "!noindex": JSONResponse({"data": [{"embedding": [1.0] * 8}]}),
    }
    return answers.get(trigger)


async def cpersona_endpoint(request: Request) -> Response:
    texts: list[str] = (await request.json())["texts"]
    if texts and texts[0] == "!hang":
        await request.receive()  # returns only when the client gives up
        return Response(status_code=204)
    broken = garbage(texts[0]) if texts else None
    return broken or JSONResponse({"embeddings": [fake_vector(text) for text in texts]})


async def openai_endpoint(request: Request) -> Response:
    body = await request.json()
    if request.headers.get("authorization") != f"Bearer {API_KEY}":
        return JSONResponse({"error": "bad key"}, status_code=401)
    if body.get("model") != MODEL or not isinstance(body.get("input"), list):
        return JSONResponse({"error": "bad request"}, status_code=400)
    texts: list[str] = body["input"]
    broken = garbage(texts[0]) if texts else None
    width = body.get("dimensions")  # the API's shortened embeddings
    data = [{"embedding": fake_vector(text)[:width], "index": i} for i, text in enumerate(texts)]
    return broken or JSONResponse({"data": data[::-1], "model": MODEL})


def make_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/embed", cpersona_endpoint, methods=["POST"]),
            Route("/v1/embeddings", openai_endpoint, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """A real uvicorn server on an ephemeral 127.0.0.1 port, in its own thread and loop."""
    server, thread, port = serve_in_thread(make_app())
    yield f"http://127.0.0.1:{port}"
    stop_thread(server, thread)


@pytest.fixture
async def cpersona(server_url: str) -> AsyncIterator[HttpEmbeddingProvider]:
    provider = HttpEmbeddingProvider(f"{server_url}/embed", timeout_seconds=5, dimension=8)
    yield provider
    await provider.aclose()


@pytest.fixture
async def openai(server_url: str) -> AsyncIterator[HttpEmbeddingProvider]:
    provider = HttpEmbeddingProvider(
        f"{server_url}/v1/embeddings",
        wire_format="openai",
        model=MODEL,
        api_key=API_KEY,
        timeout_seconds=5,
        dimension=8,
    )
    yield provider
    await provider.aclose()


def expected(texts: list[str]) -> list[list[float]]:
    return [l2_normalise(fake_vector(text)) for text in texts]


def assert_close(actual: list[list[float]], wanted: list[list[float]]) -> None:
    assert len(actual) == len(wanted)
    for got, want in zip(actual, wanted, strict=True):
        assert got == pytest.approx(want, abs=1e-12)
        assert math.hypot(*got) == pytest.approx(1.0, abs=1e-12)


async def test_cpersona_format_returns_normalised_vectors_in_order(
    cpersona: HttpEmbeddingProvider,
) -> None:
    texts = ["alpha", "beta", "gamma"]
    assert_close(await cpersona.embed(texts), expected(texts))
    assert (cpersona.name, cpersona.dimension) == ("http", 8)


async def test_openai_format_sends_model_and_key_and_sorts_by_index(
    openai: HttpEmbeddingProvider,
) -> None:
    texts = ["one", "two", "three", "four"]  # the server answers in reverse order
    assert_close(await openai.embed(texts), expected(texts))
    assert (openai.name, openai.dimension) == (MODEL, 8)


async def test_openai_format_with_a_wrong_key_is_an_embedding_error(server_url: str) -> None:
    provider = HttpEmbeddingProvider(
        f"{server_url}/v1/embeddings",
        wire_format="openai",
        model=MODEL,
        api_key="sk-wrong",
        dimension=8,
    )
    with pytest.raises(EmbeddingError, match="HTTP 401"):
        await provider.embed(["hello"])
    await provider.aclose()


async def test_large_inputs_are_sent_in_batches_and_keep_their_order(server_url: str) -> None:
    provider = HttpEmbeddingProvider(f"{server_url}/embed", batch_size=2, dimension=8)
    texts = [f"text {index}" for index in range(5)]
    assert_close(await provider.embed(texts), expected(texts))
    await provider.aclose()


async def test_empty_input_sends_nothing(cpersona: HttpEmbeddingProvider) -> None:
    assert await cpersona.embed([]) == []
    assert cpersona.dimension == 8


async def test_a_wrong_width_first_answer_does_not_pin_the_width(
    cpersona: HttpEmbeddingProvider,
) -> None:
    """Issue 10 (6): a provider whose first answer had 17 components pinned 17, and every
    later correct answer failed. The declared width holds whatever the server says."""
    with pytest.raises(EmbeddingError, match="dimension 17, expected 8"):
        await cpersona.embed(["dim:17 first answer"])
    assert cpersona.dimension == 8
    assert_close(await cpersona.embed(["hello"]), expected(["hello"]))


async def test_openai_format_asks_for_a_configured_width(server_url: str) -> None:
    provider = HttpEmbeddingProvider(
        f"{server_url}/v1/embeddings",
        wire_format="openai",
        model=MODEL,
        api_key=API_KEY,
        dimension=4,
        request_dimension=True,
    )
    try:
        [vector] = await provider.embed(["short"])
    finally:
        await provider.aclose()
    assert vector == pytest.approx(l2_normalise(fake_vector("short")[:4]))


async def test_a_configured_dimension_is_enforced(server_url: str) -> None:
    provider = HttpEmbeddingProvider(f"{server_url}/embed", dimension=16)
    with pytest.raises(EmbeddingError, match="dimension 8, expected 16"):
        await provider.embed(["hello"])
    await provider.aclose()


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ("!500", "HTTP 500"),
        ("!redirect", "HTTP 302"),
        ("!notjson", "invalid JSON"),
        ("!nan", "NaN"),
        ("!inf", "NaN or infinity"),
        ("!list", "no 'embeddings' list"),
        ("!strings", "non-number"),
        ("!bools", "non-number"),
        ("!zero", "zeros"),
        ("!short", "expected 2 vectors, got 0"),
        ("!ragged", "dimension 7, expected 8"),
    ],
)
async def test_cpersona_garbage_is_an_embedding_error(
    cpersona: HttpEmbeddingProvider, trigger: str, message: str
) -> None:
    with pytest.raises(EmbeddingError, match=message):
        await cpersona.embed([trigger, "second"])
    assert cpersona.dimension == 8


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ("!500", "HTTP 500"),
        ("!list", "no 'data' list"),
        ("!dupindex", "indices"),
        ("!noindex", "integer 'index'"),
    ],
)
async def test_openai_garbage_is_an_embedding_error(
    openai: HttpEmbeddingProvider, trigger: str, message: str
) -> None:
    with pytest.raises(EmbeddingError, match=message):
        await openai.embed([trigger, "second"])


async def test_a_slow_server_times_out_as_an_embedding_error(server_url: str) -> None:
    provider = HttpEmbeddingProvider(f"{server_url}/embed", timeout_seconds=0.3, dimension=8)
    with pytest.raises(EmbeddingError, match="timed out"):
        await provider.embed(["!hang"])
    await provider.aclose()


async def test_an_unreachable_server_is_an_embedding_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = HttpEmbeddingProvider(
        f"http://127.0.0.1:{port}/embed", timeout_seconds=2, dimension=8
    )
    with pytest.raises(EmbeddingError, match="ConnectError"):
        await provider.embed(["hello"])
    await provider.aclose()
