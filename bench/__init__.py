"""Benchmarks of the real service over MCP streamable HTTP, one subpackage per family.

``harness`` (shared: serving, the MCP client, timing, machine facts, Markdown), ``corpora``
(the texts they store), ``throughput``, ``latency``, ``quality``, ``economy``, ``scaleout``
and ``soak``. Each family's page under ``docs/benchmarks/`` says how to run it and what
its current numbers are; results are written under ``bench/results/`` (not in git).
"""

from __future__ import annotations
