"""recall latency with and without a time cue (issue 32: ``time_cue``).

An embedded Postgres is started in a temporary directory and migrated; one agent gets
``--memories`` memories (words from a small vocabulary, timestamps spread over the year
before now, random unit vectors of 384 dimensions) beside a noise agent of the same size.
Then the same ``--queries`` queries run through the library, as the tool runs them, one
after the other: without a cue, with a ``sure`` one-month cue, and with a ``vague`` one
(three months wide after its margins), each timed end to end. The query embedder is an
in-process hash (no model time), so the numbers are the database's and the pipeline's.

    .venv/bin/python -m bench.latency.cue [--memories 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import random
import statistics
import time
import uuid
from collections.abc import Sequence

from bench.harness.serving import migrated_postgres
from service.config import Settings
from service.db.pool import Database
from service.memory.library import Library
from service.memory.recall import cue, pipeline
from service.models import TenantId

WORDS = [
    "tea",
    "coffee",
    "cats",
    "dogs",
    "music",
    "travel",
    "work",
    "family",
    "garden",
    "books",
    "river",
    "lamp",
]
LOAD = """
INSERT INTO memories (tenant_id, agent_id, content, timestamp_text, timestamp_at, embedding,
                      embedding_model, created_at)
SELECT a.tenant_id, a.id,
       'note ' || g || ' about ' || ($1::text[])[1 + g % 12] || ' and '
           || ($1::text[])[1 + (g / 7) % 12],
       to_char(now() - make_interval(hours => g % 8760), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       now() - make_interval(hours => g % 8760),
       l2_normalize(array(SELECT random() - 0.5 FROM generate_series(1, 384) WHERE g > 0)::vector),
       'bench-hash', now() - make_interval(secs => g)
FROM generate_series(1, $2::int * 2) g
JOIN agents a ON a.name = (CASE WHEN g % 2 = 0 THEN 'target' ELSE 'noise' END)
"""


class HashEmbedder:
    """Deterministic unit vectors of 384 dimensions from a hash of the text."""

    name = "bench-hash"
    dimension = 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    @staticmethod
    def _vector(text: str) -> list[float]:
        rng = random.Random(hashlib.sha256(text.encode()).digest())
        raw = [rng.random() - 0.5 for _ in range(384)]
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw]

    async def aclose(self) -> None:
        return None


async def _load(db: Database, memories: int) -> TenantId:
    async with db.admin_tx() as conn:
        tenant = await conn.fetchval("INSERT INTO tenants (slug) VALUES ('cue') RETURNING id")
        await conn.execute(
            "INSERT INTO agents (tenant_id, name) VALUES ($1, 'target'), ($1, 'noise')", tenant
        )
        await conn.execute(LOAD, WORDS, memories, timeout=600)
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    return TenantId(uuid.UUID(str(tenant)))


def _cues() -> dict[str, cue.TimeCue | None]:
    return {
        "none": None,
        "sure_month": cue.parse({"ago": {"unit": "months", "value": 4}, "confidence": "sure"}),
        "vague_month": cue.parse({"ago": {"unit": "months", "value": 4}, "confidence": "vague"}),
    }


async def measure(url: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    db = await Database(url, min_size=1, max_size=4).open()
    try:
        tenant = await _load(db, args.memories)
        lib = Library(db, Settings(), embedder=HashEmbedder())
        rng = random.Random(5)
        queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(args.queries)]
        results: dict[str, dict[str, float]] = {}
        for label, time_cue in _cues().items():
            timings = []
            for n, query in enumerate(queries[:20] + queries):
                request = pipeline.RecallRequest("target", query, time_cue=time_cue)
                started = time.perf_counter()
                await pipeline.recall(lib, tenant, request)
                if n >= 20:  # the first 20 warm the connections and the plan caches
                    timings.append((time.perf_counter() - started) * 1000)
            cuts = statistics.quantiles(timings, n=100)
            results[label] = {"p50_ms": cuts[49], "p95_ms": cuts[94], "p99_ms": cuts[98]}
    finally:
        await db.close()
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.cue", description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    with migrated_postgres() as url:
        result = asyncio.run(measure(url, args))
    for label, cuts in result.items():
        print(label, " ".join(f"{key}={value:.2f}" for key, value in cuts.items()))


if __name__ == "__main__":
    main()
