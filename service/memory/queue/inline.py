"""Embedding on the write path: a short inline attempt before the write transaction.

A write never fails or waits long because the provider is slow or down
(architecture §6): ``embed_inline`` gives the provider
``CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS`` (0 = always queue) *before* the write
transaction opens, and a row that misses it is stored unembedded with a job in
``embedding_jobs`` written in the same transaction as the row."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.logs import get_logger
from service.memory.embeddings.base import EmbeddingError
from service.memory.embeddings.breaker import embed_guarded
from service.memory.library import Library

log = get_logger("service.embeddings")


def episode_text(summary: str, keywords: str) -> str:
    """What an episode's vector encodes (the same text ``sql/backlog.sql`` builds)."""
    return f"{summary} {keywords}" if keywords else summary


async def embed_checked(lib: Library, texts: Sequence[str], within: float) -> list[list[float]]:
    """Unit vectors of the declared width for ``texts`` within ``within`` seconds, through
    the library's circuit breaker; EmbeddingError otherwise."""
    assert lib.embedder is not None
    return await embed_guarded(lib.embedder, lib.breaker, texts, within)


@dataclasses.dataclass(frozen=True, slots=True)
class InlineEmbedding:
    """A write's embedding: a unit vector and its model, or the reason there is none."""

    vector: list[float] | None = None
    model: str | None = None
    error: str | None = None


async def embed_inline(lib: Library, text: str) -> InlineEmbedding:
    """Embed one row's text for the write path; never raises for provider trouble and
    never waits longer than the inline timeout (at once when the breaker is open).

    No vector (and no error) when embeddings are off or the inline timeout is 0.
    """
    provider = lib.embedder
    within = lib.settings.embedding_inline_timeout_secs
    if provider is None or within == 0:  # 0: every write goes through the queue
        return InlineEmbedding()
    try:
        vectors = await embed_checked(lib, [text], within)
    except EmbeddingError as exc:
        log.debug("inline embedding failed", error=str(exc), queued=lib.queue_enabled)
        return InlineEmbedding(error=str(exc)[:500])
    return InlineEmbedding(vector=vectors[0], model=provider.name)
