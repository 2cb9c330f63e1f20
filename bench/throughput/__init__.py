"""How fast the service stores and lists: the store/list suite (``python -m
bench.throughput.run``), what the database waits for (``db_waits``), the model's and the
MCP transport's ceilings, and export/import speed (``portability``).
Page: ``docs/benchmarks/throughput.md``.
"""

from __future__ import annotations
