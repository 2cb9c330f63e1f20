"""A circuit breaker in front of the embedding provider, and the one guarded call.

A provider that is down or hangs must not cost every request its timeout. After
``failures`` failed calls in a row (errors, bad answers, timeouts) the breaker *opens*:
for ``cooldown`` seconds every call fails at once with :class:`ProviderUnavailable`
and the provider is not contacted. Then it is *half-open*: one call (the probe) goes
through while the others still fail fast; a success closes it, a failure opens it for
another cooldown. Queries, writes and the queue worker of one process share one
breaker (each process has its own; nothing is shared through the database), and each
of them calls for a tenant, whose failures the breaker also counts on their own.

``embed_guarded`` is the only way the library calls a provider: the breaker, a time
limit of the caller's choosing (1 s for a query, the inline timeout for a write, the
provider timeout for the worker), and the checks every stored vector must pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from service.embeddings.base import (
    EmbeddingError,
    EmbeddingProvider,
    ProviderUnavailable,
    embed_queries,
    unit_vectors,
)
from service.logs import get_logger

log = get_logger("service.embeddings")
Clock = Callable[[], float]


class _Circuit:
    """One closed → open → half-open state machine (see :class:`CircuitBreaker`)."""

    def __init__(self, threshold: int, cooldown: float, clock: Clock) -> None:
        self.threshold, self.cooldown, self.clock = threshold, cooldown, clock
        self.failures = 0
        self.opened_at: float | None = None
        self.probing = False

    def retry_in(self) -> float:
        if self.opened_at is None:
            return 0.0
        return max(0.0, self.opened_at + self.cooldown - self.clock())

    def acquire(self) -> bool:
        if self.opened_at is None:
            return True
        if self.retry_in() > 0 or self.probing:
            return False
        self.probing = True
        return True

    def failed(self, *, may_open: bool = True) -> bool:
        """Count a failure; whether the circuit opened (again) now."""
        self.failures += 1
        if self.probing or (may_open and self.threshold and self.failures >= self.threshold):
            first = self.opened_at is None
            self.opened_at, self.probing = self.clock(), False
            return first
        return False


MAX_TENANT_CIRCUITS = 10_000
"""Tenants whose own circuit is remembered at once (only failing tenants have one)."""


class CircuitBreaker:
    """Closed → open after ``failures`` consecutive failures → half-open after
    ``cooldown`` seconds (one probe) → closed on success, open again on failure.

    Failures are accounted per tenant (docs/reliability.md, "Input bounds (hardening
    round two)"): a call made for a tenant (a recall's query, a write's text, the queue
    worker's texts of one tenant) counts against that tenant's own circuit, which opens
    for that tenant alone. The shared circuit, which fails every caller fast, opens only
    when the run of consecutive failures is not one tenant's: it spans two tenants or
    more, or includes calls made for no tenant. So one tenant's texts that the provider
    refuses or that time out cannot put every other tenant's recall into lexical-only
    mode or leave their writes unembedded, while a provider that is down for everyone
    still opens it after ``failures`` calls.

    ``failures=0`` disables it (always closed). One event loop; not thread-safe.
    """

    def __init__(self, failures: int = 5, cooldown: float = 10.0, clock: Clock = time.monotonic):
        if failures < 0 or cooldown <= 0:
            raise ValueError("failures must be >= 0 and cooldown > 0")
        self._threshold = failures
        self._cooldown = cooldown
        self._clock = clock
        self._shared = _Circuit(failures, cooldown, clock)
        self._tenants: dict[str, _Circuit] = {}
        self._failing: set[str | None] = set()
        """Who failed in the shared circuit's current run of failures (None: no tenant)."""

    @property
    def state(self) -> str:
        """The shared circuit: ``closed``, ``open`` (failing fast) or ``half-open``."""
        if self._shared.opened_at is None:
            return "closed"
        return "open" if self._shared.retry_in() > 0 else "half-open"

    def retry_in(self, tenant: str | None = None) -> float:
        """Seconds until a call (for ``tenant``) may reach the provider again (0: now)."""
        own = self._tenants.get(tenant) if tenant is not None else None
        return max(self._shared.retry_in(), own.retry_in() if own else 0.0)

    def tenant_state(self, tenant: str) -> str:
        """``tenant``'s own circuit: ``closed``, ``open`` or ``half-open``."""
        own = self._tenants.get(tenant)
        if own is None or own.opened_at is None:
            return "closed"
        return "open" if own.retry_in() > 0 else "half-open"

    def acquire(self, tenant: str | None = None) -> bool:
        """Whether this call may go to the provider; a half-open circuit lets one through."""
        own = self._tenants.get(tenant) if tenant is not None else None
        if own is not None and not own.acquire():
            return False
        if self._shared.acquire():
            return True
        if own is not None:
            own.probing = False
        return False

    def succeeded(self, tenant: str | None = None) -> None:
        if self._shared.opened_at is not None:
            log.info("embedding provider recovered: circuit closed")
        self._shared = _Circuit(self._threshold, self._cooldown, self._clock)
        self._failing.clear()
        if tenant is not None:
            self._tenants.pop(tenant, None)

    def failed(self, tenant: str | None = None) -> None:
        if tenant is not None:
            self._tenant_failed(tenant)
        self._failing.add(tenant)
        shared = len(self._failing) > 1 or None in self._failing
        if self._shared.failed(may_open=shared):
            log.warning("embedding provider failing: circuit open", failures=self._shared.failures)

    def _tenant_failed(self, tenant: str) -> None:
        own = self._tenants.get(tenant)
        if own is None:
            if len(self._tenants) >= MAX_TENANT_CIRCUITS:
                self._tenants.pop(next(iter(self._tenants)))
            own = self._tenants[tenant] = _Circuit(self._threshold, self._cooldown, self._clock)
        if own.failed():
            log.warning("embedding calls failing for one tenant: its circuit open", tenant=tenant)

    def abandoned(self, tenant: str | None = None) -> None:
        """The call was cancelled by its caller: neither a success nor a failure."""
        self._shared.probing = False
        own = self._tenants.get(tenant) if tenant is not None else None
        if own is not None:
            own.probing = False


async def embed_guarded(
    provider: EmbeddingProvider,
    breaker: CircuitBreaker,
    texts: Sequence[str],
    within: float,
    *,
    query: bool = False,
    tenant: str | None = None,
) -> list[list[float]]:
    """Unit vectors of the provider's declared width for ``texts`` within ``within``
    seconds, through ``breaker``; EmbeddingError otherwise (ProviderUnavailable when
    the breaker did not let the call through). ``query``: the texts are recall queries
    (an asymmetric model such as E5 embeds them with its query prefix). ``tenant``: whom
    the call is for, so its failures are accounted to it (:class:`CircuitBreaker`)."""
    if not breaker.acquire(tenant):
        wait = breaker.retry_in(tenant)
        raise ProviderUnavailable(
            f"embedding provider unavailable (circuit open, next try in {wait:.1f} s)"
        )
    try:
        async with asyncio.timeout(within):
            raw = await (embed_queries(provider, texts) if query else provider.embed(texts))
        vectors = unit_vectors(raw, count=len(texts), dimension=provider.dimension)
    except TimeoutError:
        breaker.failed(tenant)
        raise EmbeddingError(f"embedding timed out after {within:g} s") from None
    except EmbeddingError:
        breaker.failed(tenant)
        raise
    except BaseException:
        breaker.abandoned(tenant)
        raise
    breaker.succeeded(tenant)
    return vectors
