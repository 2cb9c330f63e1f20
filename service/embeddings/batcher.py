"""One embedding batcher per process: concurrent callers' texts share one model call.

The local ONNX model is cheaper per short text in a batch than alone (about 1.5 times for
a dozen tokens on the 2-core host; longer texts are bound by arithmetic and gain little),
and an HTTP provider takes a list per round trip, yet every request used to embed on its
own.
:class:`EmbeddingBatcher` sits between the library and the provider: callers hand it
texts and await their vectors; a single runner task coalesces what is waiting into one
provider call of at most ``max_batch`` texts. While a call runs, new texts simply collect
and form the next batch, so under load batches fill without any added wait. When the
provider is idle the runner waits ``window`` seconds (a few milliseconds) for company
before calling, but only when company is to be expected: the last call was shared by
several callers. A lone caller after a lone call (one client's recalls, a quiet
deployment) is embedded at once instead of paying the window for nobody.

Two lanes: ``query`` (recall's query embeddings, and the writes that wait for their
vector) and ``write`` (rows embedded after their commit and the queue worker's
batches). A batch takes query texts first, so a recall never waits behind an import
for more than the one call in progress.

The batcher is itself an :class:`EmbeddingProvider` (its ``embed`` is the query lane;
:meth:`lane` gives a provider view of the other) and keeps an asymmetric provider's query
form (``embed_queries``; such a batch holds queries only), so the query-embedding cache, the
circuit breaker and the per-caller time limits of ``embed_guarded`` stay in front of
it unchanged. A caller that gives up (its timeout) only withdraws its own texts; a
call in progress finishes for the others. A shared call that fails is tried again per
caller, so a text the provider refuses fails only its own caller. Providers run off
the event loop already (the local model on its own thread, HTTP asynchronously);
``in_flight`` bounds how many calls run at once (1 for the local model, which has one
thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Literal

from service.embeddings.base import (
    AsymmetricProvider,
    EmbeddingError,
    EmbeddingProvider,
    embed_queries,
)

Lane = Literal["query", "write"]
LANES: tuple[Lane, ...] = ("query", "write")


@dataclasses.dataclass(slots=True)
class _Request:
    texts: list[str]
    future: asyncio.Future[list[list[float]]]
    as_query: bool = False
    """Embedded as a recall query (an asymmetric model's query form); such texts never
    share a call with stored texts."""


@dataclasses.dataclass(slots=True)
class BatcherStats:
    """What the batcher did since it was built (read by benchmarks and tests)."""

    calls: int = 0
    texts: int = 0
    largest: int = 0


class _LaneView:
    """The batcher seen as a provider whose ``embed`` goes into one lane."""

    def __init__(self, batcher: EmbeddingBatcher, lane: Lane) -> None:
        self._batcher = batcher
        self._lane: Lane = lane

    @property
    def name(self) -> str:
        return self._batcher.name

    @property
    def dimension(self) -> int:
        return self._batcher.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._batcher.submit(texts, self._lane)

    async def aclose(self) -> None:
        """A view owns nothing; the batcher is closed by its owner."""


class EmbeddingBatcher:
    """Coalesces concurrent ``embed`` calls into provider calls of ≤ ``max_batch`` texts.

    Owns ``provider`` (``aclose`` closes it). Bound to the event loop of its first call;
    used from another loop (a new ``asyncio.run``) it starts afresh.
    """

    def __init__(
        self,
        provider: EmbeddingProvider,
        *,
        max_batch: int = 32,
        window: float = 0.002,
        in_flight: int = 1,
    ) -> None:
        if max_batch < 1 or window < 0 or in_flight < 1:
            raise ValueError("max_batch and in_flight must be >= 1, window >= 0")
        self._provider = provider
        self._max_batch = max_batch
        self._window = window
        self._in_flight = in_flight
        self._waiting: dict[Lane, deque[_Request]] = {lane: deque() for lane in LANES}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(in_flight)
        self._runner: asyncio.Task[None] | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self._closed = False
        self._asymmetric = isinstance(provider, AsymmetricProvider)
        self._company = False
        """Whether the last call was shared by several callers (so waiting for company
        when idle is worth the window)."""
        self.stats = BatcherStats()

    @property
    def provider(self) -> EmbeddingProvider:
        """The wrapped provider (for callers that need its raw, unbatched speed)."""
        return self._provider

    @property
    def name(self) -> str:
        return self._provider.name

    @property
    def dimension(self) -> int:
        return self._provider.dimension

    @property
    def busy(self) -> bool:
        """Whether a provider call is running or texts are waiting: a text submitted now
        would not start at once (callers use it to tell a loaded process from an idle one)."""
        return bool(self._calls) or self._pending() > 0

    def lane(self, lane: Lane) -> EmbeddingProvider:
        """A provider view whose ``embed`` queues in ``lane``."""
        return _LaneView(self, lane)

    async def load(self) -> None:
        """Load the provider's model now when it has one (the local provider does)."""
        load = getattr(self._provider, "load", None)
        if load is not None:
            await load()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of stored texts through the query lane (writes that wait for them)."""
        return await self.submit(texts, "query")

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of recall queries, in the query lane and the provider's query form."""
        return await self.submit(texts, "query", as_query=self._asymmetric)

    async def submit(
        self, texts: Sequence[str], lane: Lane, *, as_query: bool = False
    ) -> list[list[float]]:
        """Vectors for ``texts`` in input order, embedded in shared batches of ``lane``;
        EmbeddingError when the provider call fails or the batcher is closed."""
        if self._closed:
            raise EmbeddingError("the embedding batcher is closed")
        items = list(texts)
        if not items:
            return []
        self._bind()
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[list[list[float]]]] = []
        for start in range(0, len(items), self._max_batch):
            future: asyncio.Future[list[list[float]]] = loop.create_future()
            chunk = items[start : start + self._max_batch]
            self._waiting[lane].append(_Request(chunk, future, as_query))
            futures.append(future)
        self._wake.set()
        parts = await asyncio.gather(*futures)
        return [vector for part in parts for vector in part]

    async def aclose(self) -> None:
        """Fail what waits, let calls in progress end, then close the provider."""
        self._closed = True
        if self._runner is not None and self._loop is asyncio.get_running_loop():
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
            if self._calls:
                await asyncio.wait(set(self._calls))
        for queue in self._waiting.values():
            for request in queue:
                if not request.future.done():
                    request.future.set_exception(EmbeddingError("the embedding batcher closed"))
            queue.clear()
        await self._provider.aclose()

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._runner is not None and not self._runner.done():
            return
        if self._loop is not loop:
            self._wake, self._slots = asyncio.Event(), asyncio.Semaphore(self._in_flight)
            self._calls = set()
        self._loop = loop
        self._runner = loop.create_task(self._run(), name="embedding-batcher")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending():
                idle = not self._calls
                await self._slots.acquire()
                if self._worth_waiting(idle):
                    await asyncio.sleep(self._window)  # let concurrent callers join
                batch = self._take()
                if not batch:
                    self._slots.release()
                    break
                self._company = len(batch) > 1
                call = asyncio.create_task(self._call(batch))
                self._calls.add(call)
                call.add_done_callback(self._finished)

    def _worth_waiting(self, idle: bool) -> bool:
        """Whether an idle provider should wait the window before its next call: callers
        have been arriving together, and the batch is not full already."""
        return idle and self._company and self._window > 0 and self._pending() < self._max_batch

    def _finished(self, call: asyncio.Task[None]) -> None:
        self._calls.discard(call)
        self._slots.release()

    def _pending(self) -> int:
        """Texts waiting whose callers still want them."""
        return sum(
            len(request.texts)
            for queue in self._waiting.values()
            for request in queue
            if not request.future.done()
        )

    def _take(self) -> list[_Request]:
        """Up to ``max_batch`` texts of whole requests, the query lane first."""
        batch: list[_Request] = []
        size = 0
        for lane in LANES:
            queue = self._waiting[lane]
            while queue:
                request = queue[0]
                if request.future.done():  # its caller gave up
                    queue.popleft()
                    continue
                if size + len(request.texts) > self._max_batch:
                    return batch
                if batch and request.as_query != batch[0].as_query:
                    return batch  # the next call takes the other form
                batch.append(queue.popleft())
                size += len(request.texts)
        return batch

    async def _call(self, batch: list[_Request]) -> None:
        """One provider call for ``batch``; when it fails and several callers shared it,
        each caller's texts are tried again on their own, so a text the provider refuses
        fails only its own caller (docs/reliability.md, "Input bounds (hardening round
        two)"). A provider that is down costs one more call per caller that still waits."""
        texts = [text for request in batch for text in request.texts]
        try:
            vectors = await self._embed(texts, as_query=batch[0].as_query)
        except EmbeddingError as error:
            waiting = [request for request in batch if not request.future.done()]
            if len(waiting) == 1:
                waiting[0].future.set_exception(error)
                return
            for request in waiting:
                await self._call_alone(request)
            return
        start = 0
        for request in batch:
            end = start + len(request.texts)
            if not request.future.done():
                request.future.set_result(vectors[start:end])
            start = end

    async def _call_alone(self, request: _Request) -> None:
        """Embed one caller's texts in a call of their own (unless it gave up meanwhile)."""
        if request.future.done():
            return
        try:
            vectors = await self._embed(request.texts, as_query=request.as_query)
        except EmbeddingError as error:
            if not request.future.done():
                request.future.set_exception(error)
            return
        if not request.future.done():
            request.future.set_result(vectors)

    async def _embed(self, texts: list[str], *, as_query: bool = False) -> list[list[float]]:
        """One provider call (counted in ``stats``); any failure as an EmbeddingError."""
        self.stats.calls += 1
        self.stats.texts += len(texts)
        self.stats.largest = max(self.stats.largest, len(texts))
        try:
            if as_query:
                vectors = await embed_queries(self._provider, texts)
            else:
                vectors = await self._provider.embed(texts)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(str(exc)) from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"expected {len(texts)} vectors, got {len(vectors)}")
        return vectors
