"""The embedding batcher: concurrent callers share provider calls, queries go first,
a caller that gives up withdraws only its own texts, a failed shared call is tried again
per caller, so each caller gets its own failure."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from service.embeddings.base import EmbeddingError
from service.embeddings.batcher import EmbeddingBatcher
from service.embeddings.breaker import CircuitBreaker, embed_guarded

WAIT = 5.0


class Recording:
    """A provider that records each call's texts; ``gate`` holds calls while it is clear."""

    name = "recording"
    dimension = 2

    def __init__(self, *, failing: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()
        self.failing = failing
        self.closed = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.entered.set()
        await asyncio.wait_for(self.gate.wait(), WAIT)
        if self.failing:
            raise EmbeddingError("provider down")
        return [[float(len(text)), 1.0] for text in texts]

    async def aclose(self) -> None:
        self.closed = True


async def test_concurrent_callers_share_one_provider_call() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=32, window=0.02)
    texts = [f"text {'x' * n}" for n in range(8)]
    results = await asyncio.gather(*(batcher.embed([text]) for text in texts))
    assert provider.calls == [texts]
    assert results == [[[float(len(text)), 1.0]] for text in texts]
    assert batcher.stats.calls == 1
    await batcher.aclose()
    assert provider.closed


async def test_a_lone_caller_after_a_lone_call_is_not_held_for_the_window() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=32, window=60.0)
    for text in ("first", "second", "third"):  # one client's recalls, one after the other
        assert await asyncio.wait_for(batcher.embed([text]), WAIT) == [[float(len(text)), 1.0]]
    assert provider.calls == [["first"], ["second"], ["third"]]
    await batcher.aclose()


async def test_after_a_shared_call_an_idle_batcher_waits_for_company() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=32, window=0.5)
    await asyncio.gather(batcher.embed(["a"]), batcher.embed(["b"]))  # callers come together
    early = asyncio.create_task(batcher.embed(["c"]))
    await asyncio.sleep(0.05)  # well inside the window: "c" is still waiting for company
    assert provider.calls == [["a", "b"]]
    await asyncio.gather(early, batcher.embed(["d"]))
    assert provider.calls == [["a", "b"], ["c", "d"]]
    await batcher.aclose()


async def test_a_batcher_is_busy_while_a_call_runs_or_texts_wait() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=1, window=0.0)
    assert not batcher.busy
    provider.gate.clear()
    first = asyncio.ensure_future(batcher.embed(["first"]))
    await asyncio.wait_for(provider.entered.wait(), WAIT)
    assert batcher.busy  # a call runs
    second = asyncio.ensure_future(batcher.embed(["second"]))
    await asyncio.sleep(0)
    assert batcher.busy
    provider.gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), WAIT)

    async def idle() -> None:  # the finished call is forgotten by its done callback
        while batcher.busy:  # noqa: ASYNC110 (a property, no event to wait on)
            await asyncio.sleep(0.01)

    await asyncio.wait_for(idle(), WAIT)
    await batcher.aclose()


async def test_batches_are_bounded_and_keep_the_input_order() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=4, window=0.0)
    texts = [str(n) * (n + 1) for n in range(10)]
    vectors = await batcher.submit(texts, "write")
    assert [len(call) for call in provider.calls] == [4, 4, 2]
    assert vectors == [[float(len(text)), 1.0] for text in texts]
    await batcher.aclose()


async def test_queries_go_ahead_of_waiting_writes() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=4, window=0.0)
    provider.gate.clear()
    first = asyncio.ensure_future(batcher.submit(["w0"], "write"))
    await asyncio.wait_for(provider.entered.wait(), WAIT)  # the model is busy with w0
    writes = asyncio.ensure_future(batcher.submit([f"w{n}" for n in range(1, 9)], "write"))
    await asyncio.sleep(0)
    query = asyncio.ensure_future(batcher.embed(["query"]))
    await asyncio.sleep(0)
    provider.gate.set()
    await asyncio.gather(first, writes, query)
    assert provider.calls[0] == ["w0"]
    assert provider.calls[1][0] == "query"  # the next call, ahead of the 8 waiting writes
    assert sorted(text for call in provider.calls for text in call) == sorted(
        ["query", *(f"w{n}" for n in range(9))]
    )
    await batcher.aclose()


async def test_a_caller_that_times_out_leaves_the_others_their_vectors() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.0)
    provider.gate.clear()
    busy = asyncio.ensure_future(batcher.embed(["busy"]))
    await asyncio.wait_for(provider.entered.wait(), WAIT)
    breaker = CircuitBreaker()
    impatient = asyncio.ensure_future(embed_guarded(batcher, breaker, ["impatient"], 0.05))
    patient = asyncio.ensure_future(batcher.embed(["patient"]))
    with pytest.raises(EmbeddingError, match="timed out"):
        await impatient
    provider.gate.set()
    assert await patient == [[7.0, 1.0]]
    assert await busy == [[4.0, 1.0]]
    assert ["impatient"] not in provider.calls  # withdrawn before its batch was formed
    assert all("impatient" not in call for call in provider.calls)
    await batcher.aclose()


async def test_a_failed_call_fails_every_caller_in_it_and_the_next_call_is_made() -> None:
    provider = Recording(failing=True)
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.02)
    outcomes = await asyncio.gather(
        batcher.embed(["a"]), batcher.submit(["b"], "write"), return_exceptions=True
    )
    assert all(isinstance(outcome, EmbeddingError) for outcome in outcomes)
    provider.failing = False
    assert await batcher.embed(["c"]) == [[1.0, 1.0]]
    # the shared call, then each caller's part on its own (a provider that is down
    # fails them all), then the next call
    assert provider.calls == [["a", "b"], ["a"], ["b"], ["c"]]
    await batcher.aclose()


class Picky(Recording):
    """Refuses any call holding a text that starts with ``!poison`` (as an HTTP provider
    answers 400 for a whole request because of one text)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await super().embed(texts)
        if any(text.startswith("!poison") for text in texts):
            raise EmbeddingError("HTTP 400: cannot embed that")
        return vectors


async def test_a_shared_call_the_provider_refuses_is_retried_per_caller() -> None:
    """Three callers' texts share one call; the provider refuses it for one text: each
    caller's part is tried on its own, so only the caller of that text fails."""
    provider = Picky()
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.0)
    provider.gate.clear()
    busy = asyncio.ensure_future(batcher.embed(["busy"]))
    await asyncio.wait_for(provider.entered.wait(), WAIT)
    waiting = [
        asyncio.ensure_future(batcher.submit(texts, "write"))
        for texts in (["good", "also good"], ["!poison", "innocent"], ["fine"])
    ]
    await asyncio.sleep(0)
    provider.gate.set()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert outcomes[0] == [[4.0, 1.0], [9.0, 1.0]]
    assert isinstance(outcomes[1], EmbeddingError)
    assert "HTTP 400" in str(outcomes[1])
    assert outcomes[2] == [[4.0, 1.0]]
    assert await busy == [[4.0, 1.0]]
    assert provider.calls[1] == ["good", "also good", "!poison", "innocent", "fine"]
    assert provider.calls[2:] == [["good", "also good"], ["!poison", "innocent"], ["fine"]]
    await batcher.aclose()


async def test_a_lone_callers_failed_call_is_not_repeated() -> None:
    provider = Picky()
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.0)
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        await batcher.embed(["!poison", "good"])
    assert provider.calls == [["!poison", "good"]]
    await batcher.aclose()


async def test_a_closed_batcher_refuses_texts() -> None:
    batcher = EmbeddingBatcher(Recording())
    await batcher.aclose()
    with pytest.raises(EmbeddingError, match="closed"):
        await batcher.embed(["late"])


def test_settings_that_can_never_work_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        EmbeddingBatcher(Recording(), max_batch=0)


class Asymmetric(Recording):
    """A provider with a query form (E5-like): query calls are recorded with a marker."""

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(["query-form", *texts])
        return [[float(len(text)), 2.0] for text in texts]


async def test_an_asymmetric_providers_queries_keep_their_form_and_never_share_a_call() -> None:
    provider = Asymmetric()
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.02)
    breaker = CircuitBreaker()
    query, stored = await asyncio.gather(
        embed_guarded(batcher, breaker, ["find me"], WAIT, query=True),
        batcher.submit(["stored text"], "write"),
    )
    assert query[0][1] / query[0][0] == pytest.approx(2.0 / 7.0)  # the query form's vector
    assert stored == [[11.0, 1.0]]
    assert sorted(provider.calls) == [["query-form", "find me"], ["stored text"]]
    await batcher.aclose()


async def test_a_symmetric_providers_queries_and_writes_share_one_call() -> None:
    provider = Recording()
    batcher = EmbeddingBatcher(provider, max_batch=8, window=0.02)
    breaker = CircuitBreaker()
    await asyncio.gather(
        embed_guarded(batcher, breaker, ["find me"], WAIT, query=True),
        batcher.submit(["stored text"], "write"),
    )
    assert provider.calls == [["find me", "stored text"]]
    await batcher.aclose()
