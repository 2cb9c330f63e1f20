"""The handle every library operation takes: the database and the settings.

Built once by the application factory and passed down explicitly (no module
state). The MCP boundary holds one but never reaches past it into storage.
``embedder`` is None when embeddings are off (lexical recall only);
``query_cache`` holds recent query embeddings (its size and TTL: README.md, "Configuration");
``breaker`` stops calling a failing provider for a while (queries, writes and
the worker of this process share it); ``handoff`` passes rows committed without
a vector to this process's write-behind embedder.

``build_library`` puts the provider behind one :class:`EmbeddingBatcher` per
library (one per process), so concurrent queries and writes share model calls.

``build_library`` is the one place that turns settings into a provider;
``Library(db, settings)`` stays constructible for callers (and tests) that
want embeddings off.

``replica`` is the read replica (CPERSONA_READ_DATABASE_URL) that read-only calls
may use (:mod:`service.memory.reads`); such a call gets a view of the library whose
``db`` is the replica and whose ``primary`` is the database writes go to.
"""

from __future__ import annotations

import dataclasses

from service.config import Settings
from service.db.pool import Database
from service.db.read_routing import ReadReplica
from service.embeddings.base import EmbeddingProvider
from service.embeddings.batcher import EmbeddingBatcher
from service.embeddings.breaker import CircuitBreaker
from service.embeddings.cache import QueryEmbeddingCache
from service.embeddings.factory import build_provider
from service.errors import ConfigError
from service.memory.queue.handoff import Handoff

HTTP_CALLS_IN_FLIGHT = 4
"""Concurrent batches to a remote provider: one slow round trip must not hold every
caller (the local model has one thread, so it gets one)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Library:
    db: Database
    settings: Settings
    embedder: EmbeddingProvider | None = None
    query_cache: QueryEmbeddingCache = dataclasses.field(default_factory=QueryEmbeddingCache)
    breaker: CircuitBreaker = dataclasses.field(default_factory=CircuitBreaker)
    handoff: Handoff = dataclasses.field(default_factory=Handoff)
    replica: ReadReplica | None = None
    primary: Database | None = None
    """Set on a read-replica view only: the primary, for the few writes a read makes."""

    @property
    def write_db(self) -> Database:
        """Where writes go: the primary, also from a read-replica view."""
        return self.primary or self.db

    def reading_from(self, replica: Database) -> Library:
        """A view of this library that reads from ``replica`` and writes to ``db``."""
        return dataclasses.replace(self, db=replica, primary=self.db, replica=None)

    @property
    def queue_enabled(self) -> bool:
        """Whether rows that miss their inline embedding are queued for the worker."""
        return self.embedder is not None and self.settings.task_queue_enabled

    async def aclose(self) -> None:
        """Release the embedding provider (threads, HTTP connections); the pool is not ours."""
        if self.embedder is not None:
            await self.embedder.aclose()


def build_library(db: Database, settings: Settings, replica: ReadReplica | None = None) -> Library:
    """The library with the configured embedding provider and query cache.

    The caller owns the result and must ``aclose()`` it. A provider setting that
    can never work raises ConfigError naming the mode, at start-up.
    """
    try:
        embedder = build_provider(
            settings.embedding_mode,
            url=settings.embedding_url,
            api_key=settings.embedding_api_key,
            model=settings.embedding_model,
            timeout_seconds=settings.embedding_timeout_secs,
            dimension=settings.embedding_dimensions,
        )
    except ValueError as exc:
        raise ConfigError(f"CPERSONA_EMBEDDING_MODE={settings.embedding_mode}: {exc}") from exc
    if embedder is not None:
        embedder = EmbeddingBatcher(
            embedder,
            max_batch=settings.embedding_batch_size,
            window=settings.embedding_batch_window_ms / 1000,
            in_flight=1 if settings.embedding_mode == "local" else HTTP_CALLS_IN_FLIGHT,
        )
    cache = QueryEmbeddingCache(settings.embedding_cache_size, settings.embedding_cache_ttl)
    breaker = CircuitBreaker(
        settings.embedding_breaker_failures, settings.embedding_breaker_cooldown_secs
    )
    return Library(db, settings, embedder, cache, breaker, replica=replica)
