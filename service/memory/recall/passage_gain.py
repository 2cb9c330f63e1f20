"""Length-neutral vector scores for records with passages (docs/architecture.md, "Passages").

A record with passages is scored by its best vector, the most similar of its passages, so
it has as many chances to match a query as it has passages. For a query the record does not
answer, the best of ``n`` cosines exceeds one cosine by ``spread * a(n)`` on average, where
``spread`` is the standard deviation of a query's cosines with unrelated passages and
``a(n)`` the expected maximum of ``n`` standard normal draws. Left alone, that gain makes
an unrelated long record outrank an unrelated short one by chance, which shows more long
rows and costs tokens. The length-neutral score subtracts the expected gain: an unrelated
record then scores the same on average whatever its length, while a passage that answers
(its cosine far above the unrelated ones) keeps its lead less that gain.

``n`` is the record's passage count; its own vector is not one more chance, as it reads the
same first window as passage 0. Passages of one text are correlated, so ``a(n)`` bounds the
gain from above. The passage's own cosine (``PassageMatch``) stays raw: it only ranks the
parts of one record for the excerpt.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from statistics import NormalDist

from service.db.recall import Hit


@functools.lru_cache(maxsize=256)
def expected_max(n: int) -> float:
    """The expected maximum of ``n`` independent standard normal draws (0 for one), by
    Blom's approximation ``inv_cdf((n - 0.375) / (n + 0.25))`` (within 0.03 of the exact
    value: 0.59 against 0.56 at 2, 1.05 against 1.03 at 4, 1.77 at 16)."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def neutral(hits: Sequence[Hit], spread: float) -> list[Hit]:
    """``hits`` with the cosine of every record of two or more passages lowered by its
    expected gain (``spread * expected_max(parts)``; the vector channel's score is its
    cosine, so it is lowered too). ``spread`` 0 changes nothing."""
    if spread <= 0:
        return list(hits)
    return [
        _lowered(hit, spread * expected_max(hit.parts)) if hit.parts > 1 else hit for hit in hits
    ]


def _lowered(hit: Hit, gain: float) -> Hit:
    cosine = None if hit.cosine is None else hit.cosine - gain
    score = hit.score
    if hit.channel == "vector" and score is not None:
        score -= gain
    return hit._replace(cosine=cosine, score=score)
