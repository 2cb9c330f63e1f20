"""The raw local model's embedding throughput at several batch sizes: the physical limit.

The service's batcher can at best reach what the model does alone on the same machine
with the same texts in its best batch size; the store benchmark compares the rate at
which the service drains its embedding backlog with this ceiling, measured in the same
run (before the service starts, so nothing else competes for the cores). Each rate also
gives this process's CPU per text (every thread of the model counted), which other work
on a shared machine changes less than the rate.

The service is imported only when called (:mod:`bench.latency.embed` explains why).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

BATCH_SIZES = (1, 8, 16, 32, 64)


async def _rates(texts: Sequence[str], sizes: Sequence[int]) -> list[dict[str, Any]]:
    from service.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider(batch_size=max(sizes))
    try:
        await provider.load()
        await provider.embed(list(texts[:64]))  # warm the session
        rates = []
        for size in sizes:
            started, cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(texts), size):
                await provider.embed(list(texts[start : start + size]))
            seconds = time.perf_counter() - started
            cpu_ms = 1000 * (time.process_time() - cpu) / len(texts)
            rates.append(
                {
                    "batch": size,
                    "texts": len(texts),
                    "texts_per_s": len(texts) / seconds,
                    "cpu_ms_per_text": round(cpu_ms, 1),
                }
            )
        return rates
    finally:
        await provider.aclose()


def model_ceiling(texts: Sequence[str], sizes: Sequence[int] = BATCH_SIZES) -> dict[str, Any]:
    """Texts per second of the bare model per batch size, and the best of them."""
    rates = asyncio.run(_rates(texts, sizes))
    best = max(rates, key=lambda rate: float(rate["texts_per_s"]))
    return {"rates": rates, "best_texts_per_s": round(best["texts_per_s"], 1), "best": best}
