"""The texts the benchmarks store: the LoCoMo data set (``locomo``), deterministic
sentences and dialogue turns (``texts``) and the word lists they draw from (``words``).
"""

from __future__ import annotations
