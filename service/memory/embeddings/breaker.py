"""A circuit breaker in front of the embedding provider, and the one guarded call.

A provider that is down or hangs must not cost every request its timeout. After
``failures`` failed calls in a row (errors, bad answers, timeouts) the breaker *opens*:
for ``cooldown`` seconds every call fails at once with :class:`ProviderUnavailable`
and the provider is not contacted. Then it is *half-open*: one call (the probe) goes
through while the others still fail fast; a success closes it, a failure opens it for
another cooldown. Queries, writes and the queue worker of one process share one
breaker (each process has its own; nothing is shared through the database).

``embed_guarded`` is the only way the library calls a provider: the breaker, a time
limit of the caller's choosing (1 s for a query, the inline timeout for a write, the
provider timeout for the worker), and the checks every stored vector must pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from service.logs import get_logger
from service.memory.embeddings.base import (
    EmbeddingError,
    EmbeddingProvider,
    ProviderUnavailable,
    embed_queries,
    unit_vectors,
)

log = get_logger("service.embeddings")
Clock = Callable[[], float]


class CircuitBreaker:
    """Closed → open after ``failures`` consecutive failures → half-open after
    ``cooldown`` seconds (one probe) → closed on success, open again on failure.

    ``failures=0`` disables it (always closed). One event loop; not thread-safe.
    """

    def __init__(self, failures: int = 5, cooldown: float = 10.0, clock: Clock = time.monotonic):
        if failures < 0 or cooldown <= 0:
            raise ValueError("failures must be >= 0 and cooldown > 0")
        self._threshold = failures
        self._cooldown = cooldown
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        """``closed``, ``open`` (failing fast) or ``half-open`` (a probe may go)."""
        if self._opened_at is None:
            return "closed"
        return "open" if self.retry_in() > 0 else "half-open"

    def retry_in(self) -> float:
        """Seconds until a call may reach the provider again (0 when one may now)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self._cooldown - self._clock())

    def acquire(self) -> bool:
        """Whether this call may go to the provider; a half-open breaker lets one through."""
        if self._opened_at is None:
            return True
        if self.retry_in() > 0 or self._probing:
            return False
        self._probing = True
        return True

    def succeeded(self) -> None:
        if self._opened_at is not None:
            log.info("embedding provider recovered: circuit closed")
        self._failures, self._opened_at, self._probing = 0, None, False

    def failed(self) -> None:
        self._failures += 1
        if self._probing or (self._threshold and self._failures >= self._threshold):
            if self._opened_at is None:
                log.warning("embedding provider failing: circuit open", failures=self._failures)
            self._opened_at, self._probing = self._clock(), False

    def abandoned(self) -> None:
        """The call was cancelled by its caller: neither a success nor a failure."""
        self._probing = False


async def embed_guarded(
    provider: EmbeddingProvider,
    breaker: CircuitBreaker,
    texts: Sequence[str],
    within: float,
    *,
    query: bool = False,
) -> list[list[float]]:
    """Unit vectors of the provider's declared width for ``texts`` within ``within``
    seconds, through ``breaker``; EmbeddingError otherwise (ProviderUnavailable when
    the breaker did not let the call through). ``query``: the texts are recall queries
    (an asymmetric model such as E5 embeds them with its query prefix)."""
    if not breaker.acquire():
        raise ProviderUnavailable(
            f"embedding provider unavailable (circuit open, next try in {breaker.retry_in():.1f} s)"
        )
    try:
        async with asyncio.timeout(within):
            raw = await (embed_queries(provider, texts) if query else provider.embed(texts))
        vectors = unit_vectors(raw, count=len(texts), dimension=provider.dimension)
    except TimeoutError:
        breaker.failed()
        raise EmbeddingError(f"embedding timed out after {within:g} s") from None
    except EmbeddingError:
        breaker.failed()
        raise
    except BaseException:
        breaker.abandoned()
        raise
    breaker.succeeded()
    return vectors
