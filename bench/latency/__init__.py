"""Recall latency at scale (``python -m bench.latency.run``): a bulk-loaded corpus of up
to 1M memories, the recall plans Postgres chooses, p50/p95/p99 with 1 and 8 clients.
Page: ``docs/benchmarks/latency.md``.
"""

from __future__ import annotations
