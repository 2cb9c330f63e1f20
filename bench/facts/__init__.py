"""Benchmarks of facts that change (docs/benchmarks/facts.md)."""
