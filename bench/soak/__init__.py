"""Soak: 50 MCP clients on mixed tools for 10 minutes against one real ``serve``
(``python -m bench.soak.run``), optionally with Postgres killed mid-run, or beside one
abusive key (``--abusive``, ``--compare-clean``: :mod:`bench.soak.abuse`,
:mod:`bench.soak.compare`). Page: ``docs/benchmarks/soak.md``.
"""

from __future__ import annotations
