"""Query-embedding cache: agents repeat recall queries, and a remote embed costs a round trip.

LRU with a time-to-live (README.md, "Configuration": `CPERSONA_EMBEDDING_CACHE_SIZE`=256,
`CPERSONA_EMBEDDING_CACHE_TTL`=300 s). Keys include the model name, so a provider switch never
serves vectors of the old model. Only successful embeddings are cached. The cache is owned by
its caller (one per provider is typical); it is not thread-safe, being meant for one event loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from service.embeddings.base import EmbeddingProvider
from service.embeddings.breaker import CircuitBreaker, embed_guarded

Clock = Callable[[], float]

DEFAULT_MAX_ENTRIES = 256
DEFAULT_TTL_SECONDS = 300.0


class QueryEmbeddingCache:
    """Maps (model name, text) to a vector for at most `ttl_seconds` after it was stored.

    `max_entries=0` or `ttl_seconds=0` disables caching. `clock` returns seconds and must
    be monotonic; tests inject a fake one.
    """

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_entries < 0 or ttl_seconds < 0:
            raise ValueError("max_entries and ttl_seconds must not be negative")
        self._max_entries = max_entries
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, tuple[float, ...]]] = OrderedDict()

    def __len__(self) -> int:
        """Stored entries, including expired ones not yet looked up or evicted."""
        return len(self._entries)

    def get(self, model: str, text: str) -> list[float] | None:
        """A fresh copy of the cached vector, or None when absent or expired."""
        key = (model, text)
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored_at, vector = entry
        if self._clock() - stored_at >= self._ttl_seconds:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return list(vector)

    def put(self, model: str, text: str, vector: list[float]) -> None:
        """Store a copy of `vector`, evicting the least recently used entries beyond the size."""
        if self._max_entries == 0 or self._ttl_seconds == 0:
            return
        key = (model, text)
        self._entries[key] = (self._clock(), tuple(vector))
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()


async def embed_query(
    provider: EmbeddingProvider,
    breaker: CircuitBreaker,
    cache: QueryEmbeddingCache,
    text: str,
    within: float,
    *,
    tenant: str | None = None,
) -> list[float]:
    """The vector for one query text, from `cache` when fresh, else from the provider
    through `breaker` within `within` seconds; raises `EmbeddingError`.

    Concurrent misses for the same text each call the provider; the last result is kept.
    ``tenant``: whom the query is for (the breaker accounts its failures to it).
    """
    cached = cache.get(provider.name, text)
    if cached is not None:
        return cached
    [vector] = await embed_guarded(provider, breaker, [text], within, query=True, tenant=tenant)
    cache.put(provider.name, text, vector)
    return vector
