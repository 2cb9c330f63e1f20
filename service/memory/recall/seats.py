"""The hybrid ranking's vector seats (docs/tools.md, "Vector seats").

Weighted score fusion divides each signal by its best in the pool, but the two signals do
not spread alike: a query's cosines crowd into a narrow band (an unrelated row still has
half the best row's cosine), while full-text shares run from 0 to 1. So a row that only
the vector channel found can score at most the vector weight, and rows that share a
common word of the query outscore it even when their cosines are far lower; when every
cosine of the pool is under the vector threshold (a short model-dependent scale), the
hybrid gate drops such a row altogether. Rank fusion does not have that blind spot: each
channel's best rows vote by rank, so they reach the answer whatever the other channel's
scale.

A seat restores that one guarantee and nothing more: the ``n`` best rows by cosine
(their length-neutral cosine, the vector channel's own order) keep a place among the
first ``limit`` rows, each at its own score, displacing the lowest rows that hold none.
A seated row must pass the quality gate on its cosine signal, the pool-size heuristic
(halved by ``deep``), or the calibrated gate when it was calibrated on cosines, so a query
the store cannot answer gets no more noise than the spec's gate lets through.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.memory.recall.candidate import (
    CalibratedGate,
    Candidate,
    Identity,
    cosine_of,
    sorted_desc,
)
from service.memory.recall.gate import gate_score, gate_threshold, heuristic_min_score


def seated_rows(
    rows: Sequence[Candidate],
    seats: int,
    pool_size: int,
    *,
    deep: bool = False,
    gate: CalibratedGate | None = None,
) -> list[Candidate]:
    """Of the ``seats`` best non-profile rows by cosine, those whose cosine passes the
    cosine gate (a seat below it stays empty)."""
    if seats <= 0:
        return []
    scored = [row for row in rows if row.cosine is not None and not row.is_profile]
    if gate is not None and deep:
        gate = CalibratedGate(gate.threshold * 0.5, gate.signal)
    floor = gate_threshold("cosine", heuristic_min_score(pool_size, deep=deep), gate, 0)
    best = sorted_desc(scored, cosine_of)[:seats]
    return [row for row in best if (row.cosine or 0.0) >= floor]


def _ranking_score(row: Candidate) -> float | None:
    scored = gate_score(row)
    return None if scored is None else scored[1]


def with_seats(
    admitted: Sequence[Candidate], seated: Sequence[Candidate], limit: int
) -> list[Candidate]:
    """The first ``limit`` rows of ``admitted`` with every ``seated`` row among them
    (at most ``limit`` seats), in the order of the signal the list is ranked on (hybrid, or
    confidence when it is on); rows outside ``limit`` follow unchanged.

    A seated row already within the first ``limit`` takes no other row's place; one that is
    not (further down, or dropped by the gate) takes the place of the lowest unseated row."""
    seated = list(seated)[: max(0, limit)]
    if not seated:
        return list(admitted)
    seat_ids: set[Identity] = {row.identity for row in seated}
    others = [row for row in admitted if row.identity not in seat_ids]
    room = max(0, limit - len(seated))
    head = sorted_desc([*others[:room], *seated], _ranking_score)
    return head + others[room:]
