from __future__ import annotations

import asyncio
import dataclasses
import math
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tokenizers import Tokenizer

from service.embeddings.base import EmbeddingError, ModelIntegrityError
from service.embeddings.bundled import installed_file
from service.embeddings.local import (
    MAX_TOKENS,
    MODEL_DISTRIBUTION,
    MODEL_FILE,
    QUERY_WINDOW_CHARS,
    TOKENIZER_DISTRIBUTION,
    TOKENIZER_FILE,
    LocalEmbeddingProvider,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SENTENCE = (
    "the agent will remember what the user said about the project and the team "
    "before the next meeting so that it can help with the plan for the week"
)
WORDS = SENTENCE.split()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def provider() -> AsyncIterator[LocalEmbeddingProvider]:
    local = LocalEmbeddingProvider()
    await local.load()
    yield local
    await local.aclose()


def _dot(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def _max_difference(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for u, v in zip(a, b, strict=True) for x, y in zip(u, v, strict=True))


def _prefix_of_tokens(text: str, tokens: int) -> str:
    """The shortest prefix of `text` holding its first `tokens` word pieces."""
    tokenizer = Tokenizer.from_file(str(installed_file(TOKENIZER_DISTRIBUTION, TOKENIZER_FILE)))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    offsets = tokenizer.encode(text).offsets  # offsets[0] is [CLS]
    return text[: offsets[tokens][1]]


def _tampered_copy(source: Path, directory: Path) -> Path:
    target = directory / source.name
    shutil.copyfile(source, target)
    with target.open("r+b") as handle:
        handle.seek(target.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    return target


async def test_embeddings_are_384_dimensional_unit_vectors(
    provider: LocalEmbeddingProvider,
) -> None:
    vectors = await provider.embed(["hello world", "", "記憶服務"])
    assert (provider.name, provider.dimension) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    assert [len(vector) for vector in vectors] == [384, 384, 384]
    for vector in vectors:
        assert math.hypot(*vector) == pytest.approx(1.0, abs=1e-5)
    assert _dot(vectors[0], vectors[1]) < 0.99  # different texts, different vectors


async def test_related_sentences_score_higher_than_unrelated(
    provider: LocalEmbeddingProvider,
) -> None:
    cat, kitten, revenue = await provider.embed(
        ["The cat sat on the mat", "A kitten is sitting on a rug", "Quarterly revenue grew 5%"]
    )
    related = _dot(cat, kitten)
    assert related > 0.5
    assert related > _dot(cat, revenue) + 0.4
    assert related > _dot(kitten, revenue) + 0.4


async def test_a_batch_equals_one_by_one_embedding(provider: LocalEmbeddingProvider) -> None:
    texts = [" ".join(WORDS[: 1 + (index * 7) % len(WORDS)]) for index in range(40)]
    batched = await provider.embed(texts)
    single = [(await provider.embed([text]))[0] for text in texts]
    assert _max_difference(batched, single) <= 1e-5


async def test_inputs_are_truncated_at_256_tokens(provider: LocalEmbeddingProvider) -> None:
    long_text = " ".join(WORDS[index % len(WORDS)] for index in range(600))
    at_256, at_128 = _prefix_of_tokens(long_text, 254), _prefix_of_tokens(long_text, 126)
    long_vector, vector_256, vector_128 = await provider.embed([long_text, at_256, at_128])
    assert _max_difference([long_vector], [vector_256]) <= 1e-5
    assert _max_difference([long_vector], [vector_128]) > 1e-3


async def test_empty_input_gives_no_vectors(provider: LocalEmbeddingProvider) -> None:
    assert await provider.embed([]) == []


async def test_inference_leaves_the_event_loop_free(provider: LocalEmbeddingProvider) -> None:
    texts = [" ".join(WORDS[index % 5 :]) for index in range(128)]
    task = asyncio.create_task(provider.embed(texts))
    ticks = 0
    while not task.done():
        ticks += 1
        await asyncio.sleep(0)
    assert len(await task) == 128
    assert ticks > 100


@pytest.mark.parametrize("tampered", ["model", "tokenizer"])
async def test_a_file_not_matching_its_pinned_sha256_is_refused(
    tmp_path: Path, tampered: str
) -> None:
    if tampered == "model":
        bad = _tampered_copy(installed_file(MODEL_DISTRIBUTION, MODEL_FILE), tmp_path)
        local = LocalEmbeddingProvider(model_path=bad)
    else:
        bad = _tampered_copy(installed_file(TOKENIZER_DISTRIBUTION, TOKENIZER_FILE), tmp_path)
        local = LocalEmbeddingProvider(tokenizer_path=bad)
    with pytest.raises(ModelIntegrityError, match=f"sha256 mismatch for {bad}"):
        await local.embed(["hello"])
    await local.aclose()


async def test_an_intact_copy_of_the_files_loads(tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    shutil.copyfile(installed_file(TOKENIZER_DISTRIBUTION, TOKENIZER_FILE), tokenizer)
    local = LocalEmbeddingProvider(tokenizer_path=tokenizer)
    await local.load()
    assert len((await local.embed(["hello"]))[0]) == 384
    await local.aclose()


async def test_a_missing_model_file_is_an_embedding_error(tmp_path: Path) -> None:
    local = LocalEmbeddingProvider(model_path=tmp_path / "absent.onnx")
    with pytest.raises(EmbeddingError):
        await local.load()
    await local.aclose()


async def test_a_closed_provider_refuses_work() -> None:
    local = LocalEmbeddingProvider()
    await local.aclose()
    with pytest.raises(EmbeddingError, match="closed"):
        await local.embed(["hello"])


QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What does the user prefer to drink in the morning?",
    "記憶服務はどこにありますか",
    "deploy checklist for the payments service",
]


async def test_query_vectors_are_unit_vectors_close_to_the_stored_form(
    provider: LocalEmbeddingProvider,
) -> None:
    stored = await provider.embed(QUERIES)
    queries = await provider.embed_queries(QUERIES)
    assert [len(vector) for vector in queries] == [384] * len(QUERIES)
    for stored_vector, query_vector in zip(stored, queries, strict=True):
        assert math.hypot(*query_vector) == pytest.approx(1.0, abs=1e-5)
        assert _dot(stored_vector, query_vector) >= 0.98  # the same model, int8 products
    assert _max_difference(stored, queries) > 1e-4  # the query form really ran


async def test_the_query_form_keeps_related_above_unrelated(
    provider: LocalEmbeddingProvider,
) -> None:
    (query,) = await provider.embed_queries(["Where is the cat sitting?"])
    cat, revenue = await provider.embed(["The cat sat on the mat", "Quarterly revenue grew 5%"])
    assert _dot(query, cat) > _dot(query, revenue) + 0.3


async def test_a_query_vector_does_not_depend_on_the_queries_beside_it(
    provider: LocalEmbeddingProvider,
) -> None:
    batched = await provider.embed_queries(QUERIES)
    single = [(await provider.embed_queries([text]))[0] for text in QUERIES]
    assert batched == single  # each query runs alone: its quantisation is its own


class _RecordingTokenizer:
    """The real tokenizer, noting the length of every text it is asked to encode."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.lengths: list[int] = []

    def encode(self, text: str) -> object:
        self.lengths.append(len(text))
        return self.inner.encode(text)


async def test_a_long_query_is_cut_to_the_model_window_before_tokenizing(
    provider: LocalEmbeddingProvider,
) -> None:
    """Issue 36: a 600 KB query cost its whole tokenization on the one model thread; now
    at most QUERY_WINDOW_CHARS (8 characters per token of the window) are tokenized, and
    the vector is the one of the window's text."""
    model = provider._model
    assert model is not None
    recording = _RecordingTokenizer(model.tokenizer)
    provider._model = dataclasses.replace(model, tokenizer=recording)  # type: ignore[arg-type]
    try:
        huge = SENTENCE * 4_000  # ~570,000 characters
        [long_vector] = await provider.embed_queries([huge])
        [window_vector] = await provider.embed_queries([huge[:QUERY_WINDOW_CHARS]])
    finally:
        provider._model = model
    assert recording.lengths == [QUERY_WINDOW_CHARS, QUERY_WINDOW_CHARS]
    assert long_vector == window_vector
    assert QUERY_WINDOW_CHARS == 8 * MAX_TOKENS
