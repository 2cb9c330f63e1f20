from __future__ import annotations

from typing import Any

import pytest

from service.config import EmbeddingMode
from service.embeddings.base import EmbeddingProvider
from service.embeddings.factory import build_provider
from service.embeddings.http import HttpEmbeddingProvider
from service.embeddings.local import LocalEmbeddingProvider
from service.extras import local_embeddings_installed


def _build(
    mode: EmbeddingMode,
    *,
    url: str = "http://127.0.0.1:9/embed",
    api_key: str = "",
    model: str = "",
    timeout_seconds: float = 5.0,
    dimension: int = 0,
) -> EmbeddingProvider | None:
    return build_provider(
        mode,
        url=url,
        api_key=api_key,
        model=model,
        timeout_seconds=timeout_seconds,
        dimension=dimension,
    )


def test_none_mode_builds_no_provider() -> None:
    assert _build("none") is None


async def test_http_mode_builds_a_cpersona_client_named_after_the_model() -> None:
    provider = _build("http", model="my-model", dimension=8)
    assert isinstance(provider, HttpEmbeddingProvider)
    assert (provider.name, provider.dimension) == ("my-model", 8)
    await provider.aclose()


async def test_http_mode_without_a_model_is_named_http() -> None:
    provider = _build("http", dimension=384)
    assert isinstance(provider, HttpEmbeddingProvider)
    assert (provider.name, provider.dimension) == ("http", 384)
    await provider.aclose()


async def test_every_provider_declares_its_width_before_any_answer() -> None:
    """Issue 10 (6): the width comes from the configuration, never from an answer."""
    known = _build("openai", model="text-embedding-3-large")
    configured = _build("openai", model="my-own-model", dimension=768)
    assert known is not None
    assert configured is not None
    assert (known.dimension, configured.dimension) == (3072, 768)
    for provider in (known, configured):
        await provider.aclose()
    with pytest.raises(ValueError, match="CPERSONA_EMBEDDING_DIMENSIONS"):
        _build("http")  # CPersona's wire format names no model: the width must be given
    with pytest.raises(ValueError, match=r"CPERSONA_EMBEDDING_DIMENSIONS.*'unknown-model'"):
        _build("openai", model="unknown-model")


@pytest.mark.parametrize(
    ("mode", "overrides", "message"),
    [
        ("openai", {"model": "", "dimension": 8}, "model"),
        ("http", {"url": "", "dimension": 8}, "URL"),
        ("http", {"timeout_seconds": 0.0, "dimension": 8}, "timeout"),
        ("openai", {"model": "m", "dimension": 0}, "DIMENSIONS"),
        ("openai", {"model": "m", "dimension": 20_000}, "dimension"),
        ("local", {"dimension": 256}, "384"),
    ],
)
def test_unusable_settings_fail_at_build_time(
    mode: EmbeddingMode, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _build(mode, **overrides)


async def test_local_mode_builds_the_minilm_provider_without_loading_it() -> None:
    provider = _build("local", model="text-embedding-3-small", dimension=384)
    assert isinstance(provider, LocalEmbeddingProvider)
    assert (provider.name, provider.dimension) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    await provider.aclose()


def test_local_dependencies_are_available_in_the_dev_environment() -> None:
    assert local_embeddings_installed()
