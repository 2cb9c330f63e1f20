"""Admission control: bounded work per process, per lane and per API key.

Three limits decide whether a request runs, each answered with ``Retry-After``:

- **Lanes** (per process, ``503``). Work is split by kind, as Hindsight splits its
  recall and retain work, so one kind cannot starve another: ``read`` (read-only
  tools and the other MCP methods), ``write`` (tools that change data) and ``bulk``
  (the ``/v1`` streams, paced by their clients). A lane runs at most its capacity
  at a time; up to ``CPERSONA_LANE_QUEUE`` more wait in arrival order, each at most
  ``CPERSONA_LANE_QUEUE_TIMEOUT`` seconds. Anything beyond is refused at once, so
  an overloaded process answers quickly instead of queueing without end. One tenant
  may hold at most ``CPERSONA_LANE_TENANT_SHARE`` of the places and queue of the
  ``read`` and ``write`` lanes (``429`` beyond the queue share), and a freed place
  goes to the first waiter under its tenant's share: another tenant keeps capacity
  under any one tenant's flood.
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
    """At most ``capacity`` requests at a time, at most ``per_owner`` of them of one
    owner (a tenant); a bounded queue with a bounded wait, ``per_owner_queue`` places of
    it per owner.

    A freed place goes to the first waiter whose owner is under its share, so a tenant
    that fills its share queues behind itself while another tenant's request runs at
    once: one tenant's flood cannot take the lane (or the connections behind it) from
    the others. An owner over its queue share is refused at once (429).
    """

    def __init__(
        self, name: LaneName, capacity: int, queue: int, wait: float, share: float = 1.0
    ) -> None:
        self.name, self.capacity, self._queue, self._wait = name, capacity, queue, wait
        self.per_owner = max(1, math.ceil(capacity * share))
        self.per_owner_queue = max(1, math.ceil(queue * share))
        self.active = 0
        self._running: collections.Counter[str] = collections.Counter()
        self._waiters: collections.deque[tuple[str, asyncio.Future[None]]] = collections.deque()

    @property
    def waiting(self) -> int:
        return sum(1 for _, waiter in self._waiters if not waiter.done())

    def running(self, owner: str) -> int:
        """The requests of ``owner`` in the lane now."""
        return self._running[owner]

    @contextlib.asynccontextmanager
    async def slot(self, owner: str = "") -> AsyncIterator[None]:
        """Hold one place in the lane for the block; Refusal (503, or 429 for an owner
        over its queue share) when none comes."""
        await self._enter(owner)
        try:
            yield
        finally:
            self._leave(owner)

    async def _enter(self, owner: str) -> None:
        if self.active < self.capacity and self._running[owner] < self.per_owner:
            self.active += 1
            self._running[owner] += 1
            return
        if self.waiting >= self._queue:
            raise self._full("is full")
        if self._waiting_of(owner) >= self.per_owner_queue:
            raise self._owner_full()
        waiter = asyncio.get_running_loop().create_future()
        entry = (owner, waiter)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(waiter, self._wait)
        except TimeoutError:
            raise self._full(f"had no room within {self._wait:g} s") from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._leave(owner)  # the place was handed over as this request went away
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    def _waiting_of(self, owner: str) -> int:
        return sum(1 for who, waiter in self._waiters if who == owner and not waiter.done())

    def _leave(self, owner: str) -> None:
        """Hand the place to the first live waiter under its owner's share, or free it."""
        self._running[owner] -= 1
        if not self._running[owner]:
            del self._running[owner]
        for entry in self._waiters:
            who, waiter = entry
            if not waiter.done() and self._running[who] < self.per_owner:
                self._waiters.remove(entry)
                self._running[who] += 1
                waiter.set_result(None)
                return
        self.active -= 1

    def _full(self, why: str) -> Refusal:
        message = f"server busy: the {self.name} lane {why}; retry shortly"
        return Refusal(503, "overloaded", message, 1.0)

    def _owner_full(self) -> Refusal:
        message = (
            f"too many requests of this tenant waiting for the {self.name} lane (its share "
            "is CPERSONA_LANE_TENANT_SHARE of each lane); wait for some to finish"
        )
        return Refusal(429, "tenant_concurrency", message, 1.0)


def build_lanes(settings: Settings) -> dict[LaneName, Lane]:
    """The three lanes of one process; the tools' lanes shared fairly between tenants."""
    queue, wait, share = (
        settings.lane_queue,
        settings.lane_queue_timeout,
        settings.lane_tenant_share,
    )
    return {
        "read": Lane("read", settings.lane_read, queue, wait, share),
        "write": Lane("write", settings.lane_write, queue, wait, share),
        # the streams have their own pool already; a tenant's share there would only
        # refuse its second export sooner
        "bulk": Lane("bulk", settings.lane_bulk, queue, wait),
    }


@dataclasses.dataclass
class _Bucket:
    tokens: float
    stamp: float


class RateBuckets:
    """Token buckets by name: ``rate`` tokens a second up to ``burst``, memory bounded.

    ``take(name)`` spends one token of ``name``'s bucket and returns 0, or returns the
    seconds until a token is there (nothing spent); ``due(name)`` only tells those
    seconds. A rate of 0 or less never refuses.
    Once ``MAX_IDLE_BUCKETS`` names have a bucket, the full ones (idle names) are
    forgotten, so names chosen by a client cannot grow the process without bound.
    """

    def __init__(self, rate: float, burst: float) -> None:
        self._rate, self._burst = rate, max(1.0, burst)
        self._buckets: dict[str, _Bucket] = {}

    def take(self, name: str) -> float:
        if self._rate <= 0:
            return 0.0
        bucket = self._refilled(name)
        if bucket.tokens < 1.0:
            return (1.0 - bucket.tokens) / self._rate
        bucket.tokens -= 1.0
        return 0.0

    def due(self, name: str) -> float:
        """Seconds until ``name`` has a token (0: it has one now); nothing is spent."""
        if self._rate <= 0 or name not in self._buckets:
            return 0.0
        return max(0.0, (1.0 - self._refilled(name).tokens) / self._rate)

    def _refilled(self, name: str) -> _Bucket:
        now = time.monotonic()
        bucket = self._buckets.get(name)
        if bucket is None:
            self._forget_idle(now)
            bucket = self._buckets[name] = _Bucket(self._burst, now)
        bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.stamp) * self._rate)
        bucket.stamp = now
        return bucket

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
