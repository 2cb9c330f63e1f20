"""The circuit breaker in front of the embedding provider and the guarded call (pure logic).

The provider here is a scripted stand-in that counts calls; the breaker's behaviour
against a real HTTP server is covered by ``tests/e2e/test_embedder_faults.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from service.embeddings.base import EmbeddingError, ProviderUnavailable
from service.embeddings.breaker import CircuitBreaker, embed_guarded


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """A 2-d provider that fails, hangs or answers as told, and counts its calls."""

    def __init__(self) -> None:
        self.behaviour = "ok"
        self.calls = 0

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def dimension(self) -> int:
        return 2

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.behaviour == "fail":
            raise EmbeddingError("HTTP 500")
        if self.behaviour == "hang":
            await asyncio.sleep(3600)
        if self.behaviour == "wide":
            return [[1.0, 2.0, 3.0] for _ in texts]
        return [[3.0, 4.0] for _ in texts]

    async def aclose(self) -> None:
        return None


async def _call(provider: Scripted, breaker: CircuitBreaker, within: float = 5.0) -> str:
    try:
        await embed_guarded(provider, breaker, ["x"], within)
    except ProviderUnavailable:
        return "fast-fail"
    except EmbeddingError:
        return "failed"
    return "ok"


async def test_consecutive_failures_open_the_circuit_and_calls_then_fail_fast() -> None:
    clock, provider = Clock(), Scripted()
    breaker = CircuitBreaker(failures=3, cooldown=10, clock=clock)
    provider.behaviour = "fail"
    assert [await _call(provider, breaker) for _ in range(3)] == ["failed"] * 3
    assert breaker.state == "open"
    assert [await _call(provider, breaker) for _ in range(5)] == ["fast-fail"] * 5
    assert provider.calls == 3  # the open circuit did not call the provider
    assert breaker.retry_in() == pytest.approx(10)


async def test_after_the_cooldown_one_probe_goes_through_and_a_success_closes() -> None:
    clock, provider = Clock(), Scripted()
    breaker = CircuitBreaker(failures=1, cooldown=10, clock=clock)
    provider.behaviour = "fail"
    assert await _call(provider, breaker) == "failed"
    clock.now += 10
    assert breaker.state == "half-open"
    assert breaker.acquire() is True  # the probe
    assert breaker.acquire() is False  # only one at a time
    breaker.abandoned()  # the probe's caller went away: neither success nor failure
    provider.behaviour = "ok"
    assert await _call(provider, breaker) == "ok"
    assert breaker.state == "closed"
    assert await _call(provider, breaker) == "ok"


async def test_a_failed_probe_opens_the_circuit_for_another_cooldown() -> None:
    clock, provider = Clock(), Scripted()
    breaker = CircuitBreaker(failures=2, cooldown=5, clock=clock)
    provider.behaviour = "fail"
    await _call(provider, breaker)
    await _call(provider, breaker)
    clock.now += 5
    assert await _call(provider, breaker) == "failed"  # the probe, one failure is enough
    assert breaker.state == "open"
    assert breaker.retry_in() == pytest.approx(5)


async def test_a_success_in_between_resets_the_count() -> None:
    provider = Scripted()
    breaker = CircuitBreaker(failures=2, cooldown=5, clock=Clock())
    for behaviour in ("fail", "ok", "fail", "ok", "fail"):
        provider.behaviour = behaviour
        await _call(provider, breaker)
    assert breaker.state == "closed"


async def test_timeouts_and_wrong_widths_count_as_failures() -> None:
    provider = Scripted()
    breaker = CircuitBreaker(failures=2, cooldown=5, clock=Clock())
    provider.behaviour = "hang"
    started = time.monotonic()
    assert await _call(provider, breaker, within=0.1) == "failed"
    assert time.monotonic() - started < 1.0
    provider.behaviour = "wide"
    assert await _call(provider, breaker) == "failed"
    assert breaker.state == "open"


async def test_zero_failures_disables_the_breaker() -> None:
    provider = Scripted()
    breaker = CircuitBreaker(failures=0, cooldown=5, clock=Clock())
    provider.behaviour = "fail"
    assert [await _call(provider, breaker) for _ in range(10)] == ["failed"] * 10
    assert provider.calls == 10


async def test_guarded_vectors_are_unit_length_of_the_declared_width() -> None:
    vectors = await embed_guarded(Scripted(), CircuitBreaker(), ["a", "b"], 1.0)
    assert vectors == [pytest.approx([0.6, 0.8])] * 2


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="cooldown"):
        CircuitBreaker(failures=1, cooldown=0)


async def _for(provider: Scripted, breaker: CircuitBreaker, tenant: str) -> str:
    try:
        await embed_guarded(provider, breaker, ["x"], 5.0, tenant=tenant)
    except ProviderUnavailable:
        return "fast-fail"
    except EmbeddingError:
        return "failed"
    return "ok"


async def test_one_tenants_failures_open_only_its_own_circuit() -> None:
    """Issue 36: one tenant's failing queries must not fail every tenant fast."""
    clock, provider = Clock(), Scripted()
    breaker = CircuitBreaker(failures=3, cooldown=10, clock=clock)
    provider.behaviour = "fail"
    assert [await _for(provider, breaker, "abuser") for _ in range(6)] == ["failed"] * 3 + [
        "fast-fail"
    ] * 3
    assert breaker.state == "closed"
    assert breaker.tenant_state("abuser") == "open"
    provider.behaviour = "ok"
    assert await _for(provider, breaker, "victim") == "ok"
    assert await _for(provider, breaker, "abuser") == "fast-fail"
    clock.now += 10
    assert await _for(provider, breaker, "abuser") == "ok"  # its probe closes it
    assert breaker.tenant_state("abuser") == "closed"


async def test_failures_of_several_tenants_or_of_no_tenant_open_the_shared_circuit() -> None:
    clock, provider = Clock(), Scripted()
    breaker = CircuitBreaker(failures=3, cooldown=10, clock=clock)
    provider.behaviour = "fail"
    assert [await _for(provider, breaker, name) for name in ("a", "b", "a")] == ["failed"] * 3
    assert breaker.state == "open"
    assert await _for(provider, breaker, "c") == "fast-fail"
    clock.now += 10
    provider.behaviour = "ok"
    assert await _for(provider, breaker, "c") == "ok"
    provider.behaviour = "fail"
    assert await _for(provider, breaker, "a") == "failed"
    assert [await _call(provider, breaker) for _ in range(2)] == ["failed"] * 2
    assert breaker.state == "open"  # the worker's calls are nobody's fault in particular
