"""Retrieval quality of ``recall``: LoCoMo (``python -m bench.quality.locomo``), a
held-out FAQ set (``heldout``) and the local model's query form (``query_form``); the
scoring maths is ``scoring``. Page: ``docs/benchmarks/quality.md``.
"""

from __future__ import annotations
