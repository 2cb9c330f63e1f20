"""Admission control: bounded work per process, per lane and per API key.

Three limits decide whether a request runs, each answered with ``Retry-After``:

- **Lanes** (per process, ``503``). Work is split by kind, as Hindsight splits its
  recall and retain work, so one kind cannot starve another: ``read`` (read-only
  tools and the other MCP methods), ``write`` (tools that change data) and ``bulk``
  (the ``/v1`` streams, paced by their clients). A lane runs at most its capacity
  at a time; up to ``CPERSONA_LANE_QUEUE`` more wait in arrival order, each at most
  ``CPERSONA_LANE_QUEUE_TIMEOUT`` seconds. Anything beyond is refused at once, so
  an overloaded process answers quickly instead of queueing without end.
- **Concurrency per key** (per process, ``429``): at most
  ``CPERSONA_MAX_CONCURRENT_PER_KEY`` requests of one key in progress.
- **Rate per key** (``429``): a token bucket of ``CPERSONA_RATE_LIMIT_PER_KEY``
  requests per second and ``CPERSONA_RATE_LIMIT_BURST`` tokens. Each process holds
  ``1/CPERSONA_REPLICAS`` of both, so the replicas together enforce the limit
  without a round trip per request (see ``docs/reliability.md`` for why).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Final, Literal, TypeAlias

from service.config import Settings

LaneName: TypeAlias = Literal["read", "write", "bulk"]
MAX_IDLE_BUCKETS: Final = 10_000
"""Full (idle) rate buckets are forgotten once this many keys have one."""


class Refusal(Exception):
    """A request refused before it ran: HTTP ``status``, the class in ``reason``."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message
        self.retry_after = retry_after

    @property
    def retry_after_header(self) -> str:
        return str(max(1, math.ceil(self.retry_after)))


class Lane:
    """At most ``capacity`` requests at a time; a bounded queue with a bounded wait."""

    def __init__(self, name: LaneName, capacity: int, queue: int, wait: float) -> None:
        self.name, self.capacity, self._queue, self._wait = name, capacity, queue, wait
        self.active = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one place in the lane for the block; Refusal (503) when none comes."""
        await self._enter()
        try:
            yield
        finally:
            self._leave()

    async def _enter(self) -> None:
        if self.active < self.capacity and not self.waiting:
            self.active += 1
            return
        if self.waiting >= self._queue:
            raise self._full("is full")
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, self._wait)
        except TimeoutError:
            raise self._full(f"had no room within {self._wait:g} s") from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._leave()  # the place was handed over as this request went away
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _leave(self) -> None:
        """Hand the place to the first live waiter, or free it."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.active -= 1

    def _full(self, why: str) -> Refusal:
        message = f"server busy: the {self.name} lane {why}; retry shortly"
        return Refusal(503, "overloaded", message, 1.0)


def build_lanes(settings: Settings) -> dict[LaneName, Lane]:
    """The three lanes of one process."""
    queue, wait = settings.lane_queue, settings.lane_queue_timeout
    return {
        "read": Lane("read", settings.lane_read, queue, wait),
        "write": Lane("write", settings.lane_write, queue, wait),
        "bulk": Lane("bulk", settings.lane_bulk, queue, wait),
    }


@dataclasses.dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateBuckets:
    """Token buckets by name: ``rate`` tokens a second up to ``burst``, memory bounded.

    ``take(name)`` spends one token of ``name``'s bucket and returns 0, or returns the
    seconds until a token is there (nothing spent). A rate of 0 or less never refuses.
    Once ``MAX_IDLE_BUCKETS`` names have a bucket, the full ones (idle names) are
    forgotten, so names chosen by a client cannot grow the process without bound.
    """

    def __init__(self, rate: float, burst: float) -> None:
        self._rate, self._burst = rate, max(1.0, burst)
        self._buckets: dict[str, _Bucket] = {}

    def take(self, name: str) -> float:
        if self._rate <= 0:
            return 0.0
        now = time.monotonic()
        bucket = self._buckets.get(name)
        if bucket is None:
            self._forget_idle(now)
            bucket = self._buckets[name] = _Bucket(self._burst, now)
        bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.stamp) * self._rate)
        bucket.stamp = now
        if bucket.tokens < 1.0:
            return (1.0 - bucket.tokens) / self._rate
        bucket.tokens -= 1.0
        return 0.0

    def _forget_idle(self, now: float) -> None:
        if len(self._buckets) < MAX_IDLE_BUCKETS:
            return
        for name, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.stamp) * self._rate >= self._burst:
                del self._buckets[name]


class KeyLimits:
    """Per-key concurrency cap and token-bucket rate limit of one process."""

    def __init__(self, settings: Settings) -> None:
        self._max_concurrent = settings.max_concurrent_per_key
        share = 1 / settings.replicas
        burst = settings.rate_limit_burst or 2 * settings.rate_limit_per_key
        self._rates = RateBuckets(settings.rate_limit_per_key * share, burst * share)
        self._active: dict[str, int] = {}

    @contextlib.contextmanager
    def hold(self, key_id: str) -> Iterator[None]:
        """Count one request of ``key_id`` for the block; Refusal (429) when over a limit."""
        active = self._active.get(key_id, 0)
        if self._max_concurrent and active >= self._max_concurrent:
            message = (
                f"too many concurrent requests for this API key (max {self._max_concurrent} "
                "per server process); wait for one to finish"
            )
            raise Refusal(429, "key_concurrency", message, 1.0)
        wait = self._rates.take(key_id)
        if wait:
            message = "rate limit exceeded for this API key (CPERSONA_RATE_LIMIT_PER_KEY)"
            raise Refusal(429, "rate_limited", message, wait)
        self._active[key_id] = active + 1
        try:
            yield
        finally:
            left = self._active[key_id] - 1
            if left:
                self._active[key_id] = left
            else:
                del self._active[key_id]


def lane_of_tools(read_only: frozenset[str]) -> Callable[[bytes], LaneName]:
    """The lane of an MCP request: ``write`` for a ``tools/call`` of a tool not in
    ``read_only``, ``read`` for everything else (other methods, unparsable bodies, a
    ``name`` that is not a string, which the dispatcher refuses as invalid params)."""

    def lane_of(body: bytes) -> LaneName:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return "read"
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return "read"
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str):
            return "read"
        return "read" if name in read_only else "write"

    return lane_of
