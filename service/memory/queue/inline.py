"""Embedding on the write path: a short inline attempt before the write transaction.

A write never fails or waits long because the provider is slow or down
(architecture §6): ``embed_inline`` gives the provider
``CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS`` (0 = always queue) *before* the write
transaction opens, and a row that misses it is stored unembedded with a job in
``embedding_jobs`` written in the same transaction as the row."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from service.logs import get_logger
from service.memory.embeddings.base import EmbeddingError, EmbeddingProvider, unit_vectors
from service.memory.library import Library

log = get_logger("service.embeddings")

MAX_DIMENSION = 16_000  # pgvector's limit for a stored vector


def episode_text(summary: str, keywords: str) -> str:
    """What an episode's vector encodes (the same text ``sql/backlog.sql`` builds)."""
    return f"{summary} {keywords}" if keywords else summary


def checked(
    provider: EmbeddingProvider, vectors: Sequence[Sequence[float]], count: int
) -> list[list[float]]:
    """Unit vectors, or EmbeddingError for anything a row must not store (wrong count or
    width, NaN, zero, wider than pgvector allows); providers check too, this is the wall."""
    width = provider.dimension or (len(vectors[0]) if vectors else 0)
    if not 0 < width <= MAX_DIMENSION:
        raise EmbeddingError(f"embedding width {width} is outside 1..{MAX_DIMENSION}")
    return unit_vectors(vectors, count=count, dimension=width)


async def embed_checked(
    provider: EmbeddingProvider, texts: Sequence[str], within: float
) -> list[list[float]]:
    """Checked unit vectors for ``texts`` within ``within`` seconds, else EmbeddingError."""
    try:
        async with asyncio.timeout(within):
            vectors = await provider.embed(texts)
    except TimeoutError:
        raise EmbeddingError(f"embedding timed out after {within:g} s") from None
    return checked(provider, vectors, len(texts))


@dataclasses.dataclass(frozen=True, slots=True)
class InlineEmbedding:
    """A write's embedding: a unit vector and its model, or the reason there is none."""

    vector: list[float] | None = None
    model: str | None = None
    error: str | None = None


async def embed_inline(lib: Library, text: str) -> InlineEmbedding:
    """Embed one row's text for the write path; never raises for provider trouble.

    No vector (and no error) when embeddings are off or the inline timeout is 0.
    """
    provider = lib.embedder
    within = lib.settings.embedding_inline_timeout_secs
    if provider is None or within == 0:  # 0: every write goes through the queue
        return InlineEmbedding()
    try:
        vectors = await embed_checked(provider, [text], within)
    except EmbeddingError as exc:
        log.warning("inline embedding failed", error=str(exc), queued=lib.queue_enabled)
        return InlineEmbedding(error=str(exc)[:500])
    return InlineEmbedding(vector=vectors[0], model=provider.name)
