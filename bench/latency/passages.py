"""Long rows for the recall-latency tiers: passages added to a share of a loaded agent's
memories (issue 34; docs/benchmarks/passages.md, "Recall latency with 20 % long rows").

The loaded rows keep their text (the lexical half of a recall is the same with passages on
or off); a chosen row gets :data:`PER_ROW` passages, as a row of about 4,000 characters has
with the local model, each cut from the row's current text (``source_hash`` is its
``content_hash``, so recall reads them). Each passage's vector is to its row what a
synthetic row is to its topic's centroid (:mod:`bench.latency.synthetic`): the row's vector
plus gaussian noise of the same norm, normalised, so the parts of a record share its topic
as the parts of a real long text do. (Until 2026-12-05 a passage was the normalised sum of
its row's vector and the next row's, which mostly has another topic: vectors between two
topics, which the passages' HNSW walk found dearer to search, docs/benchmarks/passages.md,
"100k memories, 20 % long".) Reproducible: the noise is drawn after ``setseed``. Written
in one statement per agent (a benchmark's loader, as superuser, like the rest of
:mod:`bench.latency.loader`).
"""

from __future__ import annotations

import asyncio
from typing import Final

import asyncpg

from bench.latency.synthetic import DIMENSION

PER_ROW: Final = 4

SEED: Final = 0.20261205
"""``setseed`` value before the passages' noise is drawn."""
NOISE_SD: Final = 1 / DIMENSION**0.5
"""Per-component deviation of the noise: a vector of about unit norm, as the row's."""

ADD = """
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash,
                      start_char, end_char, embedding, embedding_model)
SELECT m.tenant_id, m.agent_id, 'mem', m.id, g.i, m.content_hash, g.i * 1000, g.i * 1000 + 1000,
       l2_normalize(m.embedding::vector(384) + noise.v::vector(384)), m.embedding_model
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id AND a.name = $1
CROSS JOIN generate_series(0, $2::int - 1) AS g(i)
CROSS JOIN LATERAL (  -- correlated with g.i and m.id, so drawn per passage
    SELECT array_agg(random_normal(0, $4::float8)) FROM generate_series(1, 384)
    WHERE g.i >= 0 AND m.id > 0) AS noise(v)
WHERE m.embedding_dim = 384 AND m.id % $3::int = 0
"""


async def add_passages(url: str, agent: str, share: float) -> int:
    """Give about ``share`` of ``agent``'s memories (every 1/share-th id) their passages;
    returns how many were written. ``VACUUM ANALYZE`` after, as after the load."""
    stride = max(1, round(1 / share))
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SELECT setseed($1::float8)", SEED)
        status = await conn.execute(ADD, agent, PER_ROW, stride, NOISE_SD)
        await conn.execute("VACUUM ANALYZE passages")
    finally:
        await conn.close()
    return int(status.split()[-1])


def add(url: str, agent: str, share: float) -> int:
    """:func:`add_passages`, from synchronous code."""
    return asyncio.run(add_passages(url, agent, share))
