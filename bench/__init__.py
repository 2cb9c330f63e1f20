"""Benchmarks of the real service over MCP streamable HTTP (run: ``python -m bench.run``)."""

from __future__ import annotations
