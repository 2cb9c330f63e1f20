"""Long rows for the recall-latency tiers: passages added to a share of a loaded agent's
memories (issue 34; docs/benchmarks/passages.md, "Recall latency with 20 % long rows").

The loaded rows keep their text (the lexical half of a recall is the same with passages on
or off); a chosen row gets :data:`PER_ROW` passages, as a row of about 4,000 characters has
with the local model, each cut from the row's current text (``source_hash`` is its
``content_hash``, so recall reads them) with a vector in the corpus's own distribution: the
normalised sum of the row's vector and a neighbour's. Written in one statement per agent
(a benchmark's loader, as superuser, like the rest of :mod:`bench.latency.loader`).
"""

from __future__ import annotations

import asyncio
from typing import Final

import asyncpg

PER_ROW: Final = 4

ADD = """
INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash,
                      start_char, end_char, embedding, embedding_model)
SELECT m.tenant_id, m.agent_id, 'mem', m.id, g.i, m.content_hash, g.i * 1000, g.i * 1000 + 1000,
       l2_normalize(m.embedding::vector(384) + n.embedding::vector(384)), m.embedding_model
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id AND a.name = $1
CROSS JOIN generate_series(0, $2::int - 1) AS g(i)
JOIN LATERAL (SELECT x.embedding FROM memories x
              WHERE x.tenant_id = m.tenant_id AND x.agent_id = m.agent_id AND x.id > m.id + g.i
              ORDER BY x.id LIMIT 1) n ON true
WHERE m.embedding_dim = 384 AND m.id % $3::int = 0
"""


async def add_passages(url: str, agent: str, share: float) -> int:
    """Give about ``share`` of ``agent``'s memories (every 1/share-th id) their passages;
    returns how many were written. ``VACUUM ANALYZE`` after, as after the load."""
    stride = max(1, round(1 / share))
    conn = await asyncpg.connect(url)
    try:
        status = await conn.execute(ADD, agent, PER_ROW, stride)
        await conn.execute("VACUUM ANALYZE passages")
    finally:
        await conn.close()
    return int(status.split()[-1])


def add(url: str, agent: str, share: float) -> int:
    """:func:`add_passages`, from synchronous code."""
    return asyncio.run(add_passages(url, agent, share))
