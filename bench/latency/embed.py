"""Vectors from the service's own local model, computed in the benchmark process.

The service is imported only when called, so a benchmark can point ``sys.path`` at its
code snapshot first (:func:`bench.harness.snapshot.use_snapshot`).
"""

from __future__ import annotations

from collections.abc import Sequence


async def embed(texts: Sequence[str]) -> list[list[float]]:
    """The local model's vectors of ``texts`` (what the service stores and queries with)."""
    from service.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider()
    try:
        return await provider.embed(list(texts))
    finally:
        await provider.aclose()
