"""traverse latency: p50/p95/p99 of 5-hop walks over 10,000 entities (issue 32's target:
p95 <= 10 ms).

An embedded Postgres is started in a temporary directory and migrated; the graph of
``tests/graph_corpus.py`` (10k entities, 100k relations in one agent, a hub, a noise
tenant) is bulk-loaded; then ``--walks`` traverses from pseudo-random entities (every
tenth from the hub) run one after the other through the library, as the tool runs them,
each timed end to end (the tenant transaction and the one statement).

    .venv/bin/python -m bench.latency.traverse [--walks 500] [--hops 5] [--limit 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Sequence

from bench.harness.serving import migrated_postgres
from service.config import Settings
from service.db.pool import Database
from service.memory import traverse
from service.memory.library import Library
from service.models import TenantId
from tests.graph_corpus import load_tenants


async def measure(url: str, args: argparse.Namespace) -> dict[str, float]:
    db = await Database(url, min_size=1, max_size=2).open()
    try:
        async with db.admin_tx() as conn:
            tenant = TenantId(uuid.UUID(await load_tenants(conn, args.entities, args.relations)))
        lib = Library(db, Settings())
        rng = random.Random(32)
        timings = []
        for walk in range(args.walks + 20):
            entity = "E0" if walk % 10 == 0 else f"E{rng.randrange(args.entities)}"
            request = traverse.TraverseRequest("target", entity, args.hops, args.limit)
            started = time.perf_counter()
            await traverse.traverse(lib, tenant, request)
            if walk >= 20:  # the first 20 warm the connection and the plan cache
                timings.append((time.perf_counter() - started) * 1000)
    finally:
        await db.close()
    cuts = statistics.quantiles(timings, n=100)
    return {"p50_ms": cuts[49], "p95_ms": cuts[94], "p99_ms": cuts[98], "walks": len(timings)}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency.traverse", description=__doc__)
    parser.add_argument("--walks", type=int, default=500)
    parser.add_argument("--hops", type=int, default=5)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=100_000)
    args = parser.parse_args(argv)
    with migrated_postgres() as url:
        result = asyncio.run(measure(url, args))
    print(" ".join(f"{key}={value:.2f}" for key, value in result.items()))


if __name__ == "__main__":
    main()
