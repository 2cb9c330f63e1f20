"""The web console's page timings through HTTP (``python -m bench.console.pages``).
Page: ``docs/benchmarks/console.md``.
"""
