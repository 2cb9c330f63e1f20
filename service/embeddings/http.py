"""Embeddings from a remote server: CPersona's `{"texts": [...]}` contract or OpenAI's API.

Wire formats:

- `cpersona`: `POST url {"texts": [...]}` -> `{"embeddings": [[...], ...]}`.
- `openai`: `POST url {"model": m, "input": [...]}` ->
  `{"data": [{"embedding": [...], "index": i}, ...]}` (Bearer key when given; sorted by index).

The server is not trusted: transport errors, timeouts, non-2xx answers, bodies that are not
JSON, wrong shapes or counts, non-numbers, NaN/infinity, zero vectors and vectors of any width
but the declared one all become `EmbeddingError`. Vectors are L2-normalised here whatever the
server claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import httpx

from service.embeddings.base import EmbeddingError, unit_vectors

WireFormat = Literal["cpersona", "openai"]
MAX_DIMENSION = 16_000  # pgvector's limit for a stored vector


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

    `dimension` is the declared width: every answer is held to it (it is never learned
    from an answer). `request_dimension` also asks an OpenAI-format server for that width
    (the `dimensions` parameter of its newer models). `name` is `model`, or `"http"` when no
    model is configured (a URL change alone must not look like a model change). Texts are
    sent in chunks of `batch_size`.
    """

    def __init__(
        self,
        url: str,
        *,
        wire_format: WireFormat = "cpersona",
        model: str = "",
        api_key: str = "",
        timeout_seconds: float = 30.0,
        dimension: int,
        request_dimension: bool = False,
        batch_size: int = 64,
    ) -> None:
        _check_settings(url, wire_format, model, timeout_seconds, dimension, batch_size)
        self._url = url
        self._wire_format: WireFormat = wire_format
        self._model = model
        self._dimension = dimension
        self._request_dimension = request_dimension and wire_format == "openai"
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
        """The declared width."""
        return self._dimension

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
        return unit_vectors(raw, count=len(texts), dimension=self._dimension)

    def _payload(self, texts: list[str]) -> dict[str, object]:
        if self._wire_format == "openai" and self._request_dimension:
            return {"model": self._model, "input": texts, "dimensions": self._dimension}
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
    dimension: int,
    batch_size: int,
) -> None:
    """Reject configurations that could never work, at construction rather than per call."""
    if not url:
        raise ValueError("an embedding URL is required")
    if wire_format == "openai" and not model:
        raise ValueError("the openai wire format needs a model name")
    if timeout_seconds <= 0:
        raise ValueError("timeout_seconds must be positive")
    if not 0 < dimension <= MAX_DIMENSION:
        raise ValueError(f"dimension must be between 1 and {MAX_DIMENSION}")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
