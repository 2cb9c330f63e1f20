"""Soak: 50 MCP clients on mixed tools for 10 minutes against one real ``serve``
(``python -m bench.soak.run``), optionally with Postgres killed mid-run.
Page: ``docs/benchmarks/soak.md``.
"""

from __future__ import annotations
