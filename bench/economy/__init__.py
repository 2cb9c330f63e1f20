"""Token economy: what the recall preview tier and the response-economy features cost a
client in tokens (``python -m bench.economy.run``), how well excerpts find the evidence
(``excerpts``) and the size of the tool catalogue (``catalogue``).
Page: ``docs/benchmarks/economy.md``.
"""

from __future__ import annotations
