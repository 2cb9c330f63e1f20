from __future__ import annotations

from typing import Any

import pytest

from service.config import EmbeddingMode
from service.extras import local_embeddings_installed
from service.memory.embeddings.base import EmbeddingProvider
from service.memory.embeddings.factory import build_provider
from service.memory.embeddings.http import HttpEmbeddingProvider
from service.memory.embeddings.local import LocalEmbeddingProvider


def _build(
    mode: EmbeddingMode,
    *,
    url: str = "http://127.0.0.1:9/embed",
    api_key: str = "",
    model: str = "",
    timeout_seconds: float = 5.0,
    dimension: int | None = None,
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
    provider = _build("http")
    assert isinstance(provider, HttpEmbeddingProvider)
    assert (provider.name, provider.dimension) == ("http", 0)
    await provider.aclose()


@pytest.mark.parametrize(
    ("mode", "overrides", "message"),
    [
        ("openai", {"model": ""}, "model"),
        ("http", {"url": ""}, "URL"),
        ("http", {"timeout_seconds": 0.0}, "timeout"),
        ("openai", {"model": "m", "dimension": 0}, "dimension"),
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
