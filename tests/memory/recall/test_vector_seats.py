"""The hybrid ranking's vector seats (docs/tools.md, "Vector seats"): the best rows by
cosine keep a place in the answer even when rows matched by words outscore them.

Pure: no database. The shapes are those of docs/benchmarks/reconstruct.md, "Why two
LongMemEval gold turns are missed": a short turn the vector channel ranks high, with no
word in common with the query and a cosine under the vector threshold, below ten rows
that match common words of the query.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from service.config import load_settings
from service.db.pool import Database
from service.errors import ConfigError
from service.memory.library import Library
from service.memory.recall import gate, rank, scoring
from service.memory.recall.candidate import Candidate, Tunables
from service.memory.recall.rank import RecallContext

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
POOL = 481
HEURISTIC = gate.heuristic_min_score(POOL)  # 0.2018: the spec's gate on the cosine signal


def mem(ident: int, hybrid: float, cosine: float, matched: bool = True) -> Candidate:
    return Candidate("mem", ident, f"memory {ident}", cosine=cosine, hybrid=hybrid, matched=matched)


def ctx(**overrides: Any) -> RecallContext:
    base: dict[str, Any] = {"pool_size": POOL, "limit": 10, "now": NOW, "vector_floor": 0.3}
    return RecallContext(**{**base, **overrides})


def seats(n: int) -> Tunables:
    return Tunables(vector_seats=n, autocut_enabled=False)


def ids(rows: tuple[Candidate, ...]) -> list[int]:
    return [row.id for row in rows]


# Twelve rows that share common words with the query, cosines 0.12-0.29, and the short
# turn (id 99): cosine 0.2119, the fourth best, no word in common.
WORDY = [mem(i, 0.86 - 0.03 * i, 0.29 - 0.01 * i if i < 2 else 0.12 + 0.005 * i) for i in range(12)]
SHORT = mem(99, 0.40, 0.2119, matched=False)
ROWS = sorted([*WORDY, SHORT], key=lambda r: -(r.hybrid or 0.0))


def test_without_seats_the_short_turn_is_gated_out() -> None:
    ranked = rank.rank(ROWS, ctx(), seats(0))
    assert 99 not in ids(ranked.rows)
    assert ids(ranked.rows) == list(range(10))


def test_a_seat_brings_the_best_cosines_in_at_their_score() -> None:
    by_cosine = sorted(ROWS, key=lambda r: -(r.cosine or 0.0))
    assert [r.id for r in by_cosine[:4]] == [0, 1, 99, 11]
    ranked = rank.rank(ROWS, ctx(), seats(3))
    assert 99 in ids(ranked.rows)
    assert len(ranked.rows) == 10
    assert ids(ranked.rows)[-1] == 99  # placed by its own score: the lowest here
    assert 9 not in ids(ranked.rows)  # the lowest unseated row gave its place
    assert 99 in [row.id for row in ranked.admitted]


def test_a_seat_below_the_cosine_gate_stays_empty() -> None:
    ranked = rank.rank(ROWS, ctx(), seats(4))  # the fourth best, 11, is at 0.175
    assert ids(ranked.rows) == [*range(9), 99]


def test_a_seat_is_gated_by_the_cosine_signal_of_the_pool() -> None:
    weak = mem(98, 0.39, HEURISTIC - 0.01, matched=False)
    rows = [*WORDY[:2], weak]
    ranked = rank.rank(rows, ctx(), seats(3))
    assert 98 not in ids(ranked.rows)
    deep = rank.rank(rows, ctx(deep=True), seats(3))  # deep halves every gate
    assert 98 in ids(deep.rows)


def test_seats_never_outnumber_the_limit_nor_lengthen_the_answer() -> None:
    ranked = rank.rank(ROWS, ctx(limit=2), seats(4))
    assert ids(ranked.rows) == [0, 1]  # the two best cosines already hold both places
    assert len(rank.rank(ROWS, ctx(), seats(13)).rows) == 10


def test_seats_apply_to_hybrid_recall_only() -> None:
    spec = [Candidate("mem", r.id, r.content, cosine=r.cosine, rrf=r.hybrid) for r in ROWS]
    with_seats = rank.rank(spec, ctx(vector_floor=None), seats(4))
    without = rank.rank(spec, ctx(vector_floor=None), seats(0))
    assert ids(with_seats.rows) == ids(without.rows)


def test_an_empty_query_seats_nothing() -> None:
    ranked = rank.rank(ROWS, ctx(query_empty=True), seats(4))
    assert 99 not in ids(ranked.rows)


def test_the_setting_reaches_the_ranking() -> None:
    settings = load_settings({"CPERSONA_HYBRID_VECTOR_SEATS": "5"})
    assert scoring.tunables(Library(cast(Database, None), settings)).vector_seats == 5
    assert load_settings({}).hybrid_vector_seats == 0
    with pytest.raises(ConfigError, match="CPERSONA_HYBRID_VECTOR_SEATS"):
        load_settings({"CPERSONA_HYBRID_VECTOR_SEATS": "-1"})
