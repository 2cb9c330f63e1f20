"""The divider with the embedder the service ships: passages sized by the local model's
own tokenizer fit its window (the model reads every token of every passage)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from service.embeddings.base import tokenized
from service.embeddings.batcher import EmbeddingBatcher
from service.embeddings.local import MAX_TOKENS, LocalEmbeddingProvider
from service.memory.passages.divider import divide

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def provider() -> AsyncIterator[LocalEmbeddingProvider]:
    local = LocalEmbeddingProvider()
    yield local
    await local.aclose()


TEXTS = {
    "unbroken words": " ".join(["x" * 99] * 160),
    "code": "\n".join(f"    total_{i} = add(total_{i - 1}, [{i}, {i * 2}])" for i in range(400)),
    "cjk": "今日は天気が良いので公園に散歩に行きました。" * 300,
    "prose": "The meeting moved to Thursday because the venue flooded. " * 300,
}


@pytest.mark.parametrize("name", sorted(TEXTS))
async def test_every_passage_fits_the_local_window(
    provider: LocalEmbeddingProvider, name: str
) -> None:
    text = TEXTS[name]
    measure = tokenized(EmbeddingBatcher(provider, max_batch=8, window=0.0))
    assert measure is provider
    assert measure.token_window == MAX_TOKENS - 2
    [ends] = await measure.token_ends([text])
    spans = divide(text, ends, measure.token_window)
    assert len(spans) >= len(ends) // measure.token_window
    assert spans[0].start == 0
    assert spans[-1].end == len(text)
    pieces = await measure.token_ends([text[s.start : s.end] for s in spans])
    assert max(len(piece) for piece in pieces) <= measure.token_window


async def test_a_16000_character_unbroken_word_is_one_unknown_token(
    provider: LocalEmbeddingProvider,
) -> None:
    """The wordpiece tokenizer reads a word over 100 characters as one [UNK]: the model
    sees all of it already, so it gets no passages (and costs one vector)."""
    text = "x" * 16_000
    [ends] = await provider.token_ends([text])
    assert ends == [16_000]
    assert divide(text, ends, provider.token_window) == []


async def test_a_text_within_the_window_has_no_passages(provider: LocalEmbeddingProvider) -> None:
    text = "A short note about the venue."
    [ends] = await provider.token_ends([text])
    assert 0 < len(ends) < 20
    assert divide(text, ends, provider.token_window) == []
