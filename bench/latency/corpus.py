"""A realistic corpus for the recall-latency benchmark: LoCoMo-derived memories.

The synthetic corpus (template sentences, clustered random vectors) understates what
users see (issue 15: real text and real vectors cost nearly twice as much). This one
takes the turns of LoCoMo (``"<speaker>: <text>"``, the data set is read, never copied)
as memories, with their real vectors from the service's local model, and LoCoMo's
questions as queries. Beyond the 5,882 distinct turns a row is a turn with a copy number
(``"... (copy 3)"``): its vector is its turn's plus a little noise, renormalised (cosine
about 0.97 to the original), so the HNSW graph never holds exact duplicates.

Rows are bulk-loaded like the synthetic corpus (:func:`bench.latency.loader.load` with
these batches), so 100k rows load in minutes; ``--store-through-mcp`` stores tiers up to
10k through ``store`` instead, embedded by the service itself (the slow, exact path).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from bench.corpora.locomo import DEFAULT_DATA, read_samples
from bench.latency.embed import embed
from bench.latency.loader import BATCH, EPOCH, SPAN_DAYS, AgentLoad, Batches
from bench.latency.synthetic import FloatArray, vector_bytes
from bench.quality import scoring as quality

NOISE = 0.01


@functools.cache
def turns(path: Path = DEFAULT_DATA) -> tuple[str, ...]:
    """Every distinct turn text of the data set, in order."""
    texts = [
        quality.turn_content(turn)
        for sample in read_samples(path, None)
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return tuple(dict.fromkeys(texts))


@functools.cache
def questions(path: Path = DEFAULT_DATA) -> tuple[str, ...]:
    """Every distinct question of the data set, in order (the query texts)."""
    texts = [str(qa["question"]) for sample in read_samples(path, None) for qa in sample["qa"]]
    return tuple(dict.fromkeys(texts))


@functools.cache
def turn_vectors(path: Path = DEFAULT_DATA) -> FloatArray:
    """The local model's vectors of :func:`turns` (computed once per run; call it outside
    an event loop before the loader iterates :func:`batches_from`)."""
    return np.asarray(asyncio.run(embed(list(turns(path)))), dtype=np.float32)


def row_text(index: int, base: tuple[str, ...]) -> str:
    """The text of row ``index``: a turn, then the turns again with a copy number."""
    text = base[index % len(base)]
    copy = index // len(base)
    return text if copy == 0 else f"{text} (copy {copy})"


def batches_from(path: Path) -> Batches:
    """The rows of the data set at ``path`` in batches, for :func:`bench.latency.loader.load`."""
    return functools.partial(_batches, path)


def _batches(
    path: Path, plan: AgentLoad, seed: int, centres: FloatArray
) -> Iterator[tuple[list[str], list[bytes], list[datetime]]]:
    base, vectors = turns(path), turn_vectors(path)
    rng = np.random.default_rng(seed)
    for start in range(0, plan.rows, BATCH):
        indexes = range(start, min(plan.rows, start + BATCH))
        texts = [row_text(i, base) for i in indexes]
        rows = vectors[[i % len(base) for i in indexes]].copy()
        copies = np.array([i >= len(base) for i in indexes])
        rows[copies] += rng.normal(0.0, NOISE, size=(int(copies.sum()), rows.shape[1]))
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        stamps = [EPOCH - timedelta(minutes=(plan.rows - i) * SPAN_DAYS // 10) for i in indexes]
        yield texts, vector_bytes(rows.astype(np.float32)), stamps
