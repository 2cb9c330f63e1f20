from __future__ import annotations

from collections.abc import Sequence

import pytest

from service.embeddings.base import EmbeddingError, EmbeddingProvider, l2_normalise
from service.embeddings.breaker import CircuitBreaker
from service.embeddings.cache import QueryEmbeddingCache, embed_query


async def _query(provider: EmbeddingProvider, cache: QueryEmbeddingCache, text: str) -> list[float]:
    return await embed_query(provider, CircuitBreaker(failures=0), cache, text, 5.0)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingProvider:
    """Deterministic two-dimensional embedder that counts calls (pure logic, not a model)."""

    def __init__(self, name: str = "fake-model", *, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self._name = name
        self._fail = fail

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return 2

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self._fail:
            raise EmbeddingError("down")
        return [[float(len(text)), 1.0] for text in texts]

    async def aclose(self) -> None:
        return None


def test_least_recently_used_entry_is_evicted_first() -> None:
    cache = QueryEmbeddingCache(max_entries=2, ttl_seconds=60, clock=FakeClock())
    cache.put("m", "a", [1.0])
    cache.put("m", "b", [2.0])
    assert cache.get("m", "a") == [1.0]  # "a" is now the most recently used
    cache.put("m", "c", [3.0])
    assert cache.get("m", "b") is None
    assert cache.get("m", "a") == [1.0]
    assert cache.get("m", "c") == [3.0]
    assert len(cache) == 2


def test_entries_expire_after_the_ttl() -> None:
    clock = FakeClock()
    cache = QueryEmbeddingCache(max_entries=8, ttl_seconds=300, clock=clock)
    cache.put("m", "q", [1.0])
    clock.now += 299.9
    assert cache.get("m", "q") == [1.0]
    clock.now += 0.1
    assert cache.get("m", "q") is None
    assert len(cache) == 0


def test_a_hit_does_not_extend_the_ttl() -> None:
    clock = FakeClock()
    cache = QueryEmbeddingCache(max_entries=8, ttl_seconds=10, clock=clock)
    cache.put("m", "q", [1.0])
    clock.now += 9
    assert cache.get("m", "q") == [1.0]
    clock.now += 1
    assert cache.get("m", "q") is None


def test_keys_include_the_model_name() -> None:
    cache = QueryEmbeddingCache(clock=FakeClock())
    cache.put("model-a", "q", [1.0])
    assert cache.get("model-b", "q") is None


def test_callers_cannot_mutate_cached_vectors() -> None:
    cache = QueryEmbeddingCache(clock=FakeClock())
    vector = [1.0, 2.0]
    cache.put("m", "q", vector)
    vector[0] = 9.0
    fetched = cache.get("m", "q")
    assert fetched == [1.0, 2.0]
    fetched.append(3.0)
    assert cache.get("m", "q") == [1.0, 2.0]


def test_size_zero_disables_the_cache() -> None:
    cache = QueryEmbeddingCache(max_entries=0, clock=FakeClock())
    cache.put("m", "q", [1.0])
    assert cache.get("m", "q") is None


def test_negative_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="negative"):
        QueryEmbeddingCache(max_entries=-1)


async def test_embed_query_calls_the_provider_once_per_fresh_text() -> None:
    clock = FakeClock()
    cache = QueryEmbeddingCache(ttl_seconds=300, clock=clock)
    provider = CountingProvider()
    first = await _query(provider, cache, "hello")
    second = await _query(provider, cache, "hello")
    assert first == second == pytest.approx(l2_normalise([5.0, 1.0]))
    assert provider.calls == [["hello"]]
    clock.now += 300
    await _query(provider, cache, "hello")
    assert provider.calls == [["hello"], ["hello"]]


async def test_embed_query_separates_providers_by_model_name() -> None:
    cache = QueryEmbeddingCache(clock=FakeClock())
    first, second = CountingProvider("one"), CountingProvider("two")
    await _query(first, cache, "q")
    await _query(second, cache, "q")
    assert first.calls == second.calls == [["q"]]


async def test_embed_query_does_not_cache_failures() -> None:
    cache = QueryEmbeddingCache(clock=FakeClock())
    provider = CountingProvider(fail=True)
    for _ in range(2):
        with pytest.raises(EmbeddingError):
            await _query(provider, cache, "q")
    assert len(provider.calls) == 2
    assert len(cache) == 0
