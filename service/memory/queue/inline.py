"""Embedding on the write path: after the commit by default, or a short inline wait.

A write never waits on the embedder by default (``CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS``
= 0): the row is stored unembedded with a job in ``embedding_jobs`` written in the same
transaction (durable), answered at once, and handed to this process's write-behind
embedder (``embed_soon``), which embeds it moments later through the batcher; the queue
worker covers a process that dies or a provider that fails. Meanwhile the row is found
lexically. With a timeout > 0 (read-your-embedding) ``embed_inline`` gives the provider
that long *before* the write transaction opens, and a row that misses it is queued the
same way."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.db.queue import ItemKind
from service.embeddings.base import EmbeddingError
from service.embeddings.batcher import EmbeddingBatcher, Lane
from service.embeddings.breaker import embed_guarded
from service.logs import get_logger
from service.memory.library import Library
from service.models import TenantId

log = get_logger("service.embeddings")


def episode_text(summary: str, keywords: str) -> str:
    """What an episode's vector encodes: the Python twin of the SQL ``episode_text``
    (migration 0014) that the queue's statements use."""
    return f"{summary} {keywords}" if keywords else summary


async def embed_checked(
    lib: Library,
    tenant_id: TenantId,
    texts: Sequence[str],
    within: float,
    *,
    lane: Lane = "query",
) -> list[list[float]]:
    """Unit vectors of the declared width for ``tenant_id``'s ``texts`` within ``within``
    seconds, through the library's circuit breaker and batcher lane; EmbeddingError
    otherwise. The breaker accounts a failure to ``tenant_id``, so one tenant's texts
    that the provider refuses open that tenant's circuit, not every tenant's
    (docs/reliability.md, "Input bounds (hardening round two)")."""
    assert lib.embedder is not None
    provider = lib.embedder
    if isinstance(provider, EmbeddingBatcher):
        provider = provider.lane(lane)
    return await embed_guarded(provider, lib.breaker, texts, within, tenant=str(tenant_id))


@dataclasses.dataclass(frozen=True, slots=True)
class InlineEmbedding:
    """A write's embedding: a unit vector and its model, or the reason there is none."""

    vector: list[float] | None = None
    model: str | None = None
    error: str | None = None


async def embed_inline(lib: Library, tenant_id: TenantId, text: str) -> InlineEmbedding:
    """Embed one row's text for ``tenant_id``'s write; never raises for provider trouble
    and never waits longer than the inline timeout (at once when the breaker, shared or
    the tenant's own, is open).

    No vector (and no error) when embeddings are off or the inline timeout is 0.
    """
    provider = lib.embedder
    within = lib.settings.embedding_inline_timeout_secs
    if provider is None or within == 0:  # 0: every write goes through the queue
        return InlineEmbedding()
    try:
        vectors = await embed_checked(lib, tenant_id, [text], within)
    except EmbeddingError as exc:
        log.debug("inline embedding failed", error=str(exc), queued=lib.queue_enabled)
        return InlineEmbedding(error=str(exc)[:500])
    return InlineEmbedding(vector=vectors[0], model=provider.name)


def waits_for_vector(lib: Library) -> bool:
    """Whether writes embed before their transaction (inline timeout > 0)."""
    return lib.embedder is not None and lib.settings.embedding_inline_timeout_secs > 0


def embed_soon(lib: Library, tenant_id: TenantId, kind: ItemKind, item_id: int) -> None:
    """Hand a row committed with a job to the write-behind embedder (after the commit)."""
    if lib.queue_enabled:
        lib.handoff.offer(tenant_id, kind, item_id)
