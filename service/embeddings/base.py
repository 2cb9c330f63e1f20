"""The embedding provider contract and the checks every provider's output passes.

Vectors end up in a pgvector column searched by inner product, which equals cosine similarity
only for unit vectors. A provider that returns the wrong shape, non-finite numbers or a zero
vector would poison stored rows silently, so every provider runs its output through
`unit_vectors` (or at least `check_vectors`) and reports any problem as `EmbeddingError`.

This module is pure Python on purpose: the HTTP provider must not need numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


class EmbeddingError(Exception):
    """The embedding provider could not produce valid vectors for this call.

    Callers treat it as "no vectors now": recall falls back to lexical retrieval and the
    write path leaves the row for the embedding queue to retry.
    """


class ModelIntegrityError(EmbeddingError):
    """A bundled model file does not match its pinned sha256; it is never loaded."""


class ProviderUnavailable(EmbeddingError):
    """The provider was not called: its circuit breaker is open after repeated failures.

    Nothing was attempted, so a queued row's retry count does not grow.
    """


class EmbeddingProvider(Protocol):
    """Turns texts into unit-length float vectors of one fixed dimension.

    The caller owns the instance and must `aclose()` it. Implementations are safe to call
    concurrently from one event loop.
    """

    @property
    def name(self) -> str:
        """The model name recorded next to stored vectors, so a model change is detected."""
        ...

    @property
    def dimension(self) -> int:
        """The declared vector length, known before any answer (never learned from one)."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in input order; raises `EmbeddingError` on any failure."""
        ...

    async def aclose(self) -> None:
        """Release threads, sessions and connections; the provider is unusable afterwards."""
        ...


@runtime_checkable
class AsymmetricProvider(Protocol):
    """A provider whose model embeds queries differently from stored texts (E5's
    ``query:`` / ``passage:``): ``embed`` is for stored texts, this for recall queries."""

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per query, in input order; raises `EmbeddingError`."""
        ...


@runtime_checkable
class Tokenized(Protocol):
    """A provider that can say where its tokenizer's tokens end in a text and how many
    it reads (the passage divider sizes passages by them: docs/architecture.md,
    "Passages")."""

    @property
    def token_window(self) -> int:
        """Tokens of a stored text the model reads (without its special tokens)."""
        ...

    async def token_ends(self, texts: Sequence[str]) -> list[list[int]]:
        """Per text, the character offset where each of its tokens ends, in order."""
        ...


def tokenized(provider: EmbeddingProvider) -> Tokenized | None:
    """The provider's tokenizer, looked for through wrappers that expose ``provider``
    (the batcher); None when it has none."""
    current: object = provider
    while not isinstance(current, Tokenized):
        inner = getattr(current, "provider", None)
        if inner is None or inner is current:
            return None
        current = inner
    return current


async def embed_queries(provider: EmbeddingProvider, texts: Sequence[str]) -> list[list[float]]:
    """Query vectors: the provider's query embedding when it has one, else `embed`."""
    if isinstance(provider, AsymmetricProvider):
        return await provider.embed_queries(texts)
    return await provider.embed(texts)


def l2_normalise(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to unit length; zero or non-finite norms raise `EmbeddingError`.

    `math.hypot` is used because it does not overflow for large components.
    """
    norm = math.hypot(*vector)
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingError(f"cannot normalise a vector with norm {norm}")
    return [component / norm for component in vector]


def check_vectors(vectors: Sequence[Sequence[float]], *, count: int, dimension: int) -> None:
    """Raise `EmbeddingError` unless there are `count` finite, non-zero vectors of `dimension`."""
    if len(vectors) != count:
        raise EmbeddingError(f"expected {count} vectors, got {len(vectors)}")
    for position, vector in enumerate(vectors):
        _check_vector(vector, position=position, dimension=dimension)


def _check_vector(vector: Sequence[float], *, position: int, dimension: int) -> None:
    if len(vector) != dimension:
        raise EmbeddingError(f"vector {position} has dimension {len(vector)}, expected {dimension}")
    if not all(math.isfinite(component) for component in vector):
        raise EmbeddingError(f"vector {position} contains NaN or infinity")
    if not any(vector):
        raise EmbeddingError(f"vector {position} is all zeros")


def unit_vectors(
    vectors: Sequence[Sequence[float]], *, count: int, dimension: int
) -> list[list[float]]:
    """Validate with `check_vectors`, then L2-normalise each vector."""
    check_vectors(vectors, count=count, dimension=dimension)
    return [l2_normalise(vector) for vector in vectors]
