"""Installs the phase timers in a ``serve`` that a benchmark starts (see
:mod:`bench.latency.instrument`): Python imports ``sitecustomize`` from ``PYTHONPATH`` at
start-up, and this one acts only when ``BENCH_PHASES_OUT`` names the records' file."""

from __future__ import annotations

import os

if os.environ.get("BENCH_PHASES_OUT"):
    from bench.latency.instrument import install

    install(os.environ["BENCH_PHASES_OUT"])
