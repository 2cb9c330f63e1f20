"""Embeddings from a remote server: CPersona's `{"texts": [...]}` contract or OpenAI's API.

Wire formats:

- `cpersona`: `POST url {"texts": [...]}` -> `{"embeddings": [[...], ...]}`.
- `openai`: `POST url {"model": m, "input": [...]}` ->
  `{"data": [{"embedding": [...], "index": i}, ...]}` (Bearer key when given; sorted by index).

The server is not trusted: transport errors, timeouts, non-2xx answers, bodies that are not
JSON, wrong shapes or counts, non-numbers, NaN/infinity, zero vectors and dimension changes all
become `EmbeddingError`. Vectors are L2-normalised here whatever the server claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import httpx

from service.memory.embeddings.base import EmbeddingError, unit_vectors

WireFormat = Literal["cpersona", "openai"]


def _as_vector(value: object, position: int) -> list[float]:
    """A JSON array of numbers as floats; booleans and strings are rejected."""
    if not isinstance(value, list):
        raise EmbeddingError(f"embedding {position} is not a list")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        raise EmbeddingError(f"embedding {position} contains a non-number")
    return [float(x) for x in value]


def parse_cpersona(body: object) -> list[list[float]]:
    """Vectors from `{"embeddings": [[...], ...]}`."""
    if not isinstance(body, dict) or not isinstance(body.get("embeddings"), list):
        raise EmbeddingError("response has no 'embeddings' list")
    embeddings: list[object] = body["embeddings"]
    return [_as_vector(value, position) for position, value in enumerate(embeddings)]


def _indexed_vector(item: object, position: int) -> tuple[int, list[float]]:
    if not isinstance(item, dict):
        raise EmbeddingError(f"data item {position} is not an object")
    index = item.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise EmbeddingError(f"data item {position} has no integer 'index'")
    return index, _as_vector(item.get("embedding"), position)


def parse_openai(body: object) -> list[list[float]]:
    """Vectors from `{"data": [{"embedding": [...], "index": i}, ...]}`, ordered by index.

    The indices must be exactly 0..n-1, so a vector is never attached to the wrong text.
    """
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise EmbeddingError("response has no 'data' list")
    items: list[object] = body["data"]
    indexed = sorted(
        (_indexed_vector(item, position) for position, item in enumerate(items)),
        key=lambda pair: pair[0],
    )
    if [index for index, _ in indexed] != list(range(len(indexed))):
        raise EmbeddingError("response indices are not 0..n-1")
    return [vector for _, vector in indexed]


class HttpEmbeddingProvider:
    """Embedding client for one URL and wire format; owns its `httpx.AsyncClient`.

    `dimension=None` learns the dimension from the first valid response and then holds the
    server to it. `name` is `model`, or `"http"` when no model is configured (a URL change
    alone must not look like a model change). Texts are sent in chunks of `batch_size`.
    """

    def __init__(
        self,
        url: str,
        *,
        wire_format: WireFormat = "cpersona",
        model: str = "",
        api_key: str = "",
        timeout_seconds: float = 30.0,
        dimension: int | None = None,
        batch_size: int = 64,
    ) -> None:
        _check_settings(url, wire_format, model, timeout_seconds, dimension, batch_size)
        self._url = url
        self._wire_format: WireFormat = wire_format
        self._model = model
        self._dimension = dimension
        self._batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout_seconds), follow_redirects=False
        )

    @property
    def name(self) -> str:
        """The configured model name, or `"http"`."""
        return self._model or "http"

    @property
    def dimension(self) -> int:
        """The configured or learned dimension; 0 before the first response when not set."""
        return self._dimension or 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors in input order; raises `EmbeddingError` on any failure."""
        items = list(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(items), self._batch_size):
            vectors.extend(await self._embed_chunk(items[start : start + self._batch_size]))
        return vectors

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        body = await self._post(self._payload(texts))
        raw = parse_openai(body) if self._wire_format == "openai" else parse_cpersona(body)
        dimension = self._dimension or (len(raw[0]) if raw else 0)
        vectors = unit_vectors(raw, count=len(texts), dimension=dimension)
        self._dimension = dimension
        return vectors

    def _payload(self, texts: list[str]) -> dict[str, object]:
        if self._wire_format == "openai":
            return {"model": self._model, "input": texts}
        return {"texts": texts}

    async def _post(self, payload: dict[str, object]) -> object:
        """POST `payload`; the parsed JSON body, or `EmbeddingError` for any failure."""
        try:
            response = await self._client.post(self._url, json=payload)
            response.raise_for_status()
            body: object = response.json()
        except httpx.TimeoutException as exc:
            raise EmbeddingError(f"embedding request to {self._url} timed out") from exc
        except httpx.HTTPStatusError as exc:
            status = exc.response.status_code
            raise EmbeddingError(f"embedding server {self._url} answered HTTP {status}") from exc
        except httpx.HTTPError as exc:
            kind = type(exc).__name__
            raise EmbeddingError(f"embedding request to {self._url} failed: {kind}") from exc
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError
            raise EmbeddingError(f"embedding server {self._url} sent invalid JSON") from exc
        return body


def _check_settings(
    url: str,
    wire_format: WireFormat,
    model: str,
    timeout_seconds: float,
    dimension: int | None,
    batch_size: int,
) -> None:
    """Reject configurations that could never work, at construction rather than per call."""
    if not url:
        raise ValueError("an embedding URL is required")
    if wire_format == "openai" and not model:
        raise ValueError("the openai wire format needs a model name")
    if timeout_seconds <= 0:
        raise ValueError("timeout_seconds must be positive")
    if dimension is not None and dimension < 1:
        raise ValueError("dimension must be positive")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
