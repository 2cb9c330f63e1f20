"""The default hybrid ranking: score fusion, the match-or-cosine gate, the second stage."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from service.memory.recall import fusion, gate, rank, rerank
from service.memory.recall.candidate import Candidate, Identity


def mem(i: int, **signals: object) -> Candidate:
    return Candidate(kind="mem", id=i, content=f"row {i}", **signals)  # type: ignore[arg-type]


def test_hybrid_fuses_both_signals_of_every_row_with_stored_cosines() -> None:
    vector = [mem(1, cosine=0.8), mem(2, cosine=0.4)]
    keyword = [mem(2, lexical=6.0), mem(3, lexical=3.0)]
    fused = fusion.fuse_hybrid(vector, [[], keyword], cosines={("mem", 3): 0.2}, lexical_weight=0.7)
    by_id = {row.id: row for row in fused}
    # each signal over its best in the pool: text 6.0, cosine 0.8
    assert math.isclose(by_id[2].hybrid or 0, 0.7 * 1.0 + 0.3 * 0.5)
    assert math.isclose(by_id[3].hybrid or 0, 0.7 * 0.5 + 0.3 * 0.25)
    assert math.isclose(by_id[1].hybrid or 0, 0.3 * 1.0)
    assert [row.id for row in fused] == [2, 3, 1]
    assert by_id[3].cosine == 0.2  # found by words alone, yet it has its similarity


def test_hybrid_holes_never_surface_and_the_literal_fallback_gets_a_full_vote() -> None:
    keyword = fusion.mark_excluded([mem(1, lexical=5.0), mem(2, lexical=4.0)], lambda c: c.id == 1)
    assert [row.id for row in fusion.fuse_hybrid([], [keyword])] == [2]
    literal = fusion.fuse_hybrid([], [[mem(7)]], lexical_weight=0.45)
    assert math.isclose(literal[0].hybrid or 0, 0.45)


def test_hybrid_gate_keeps_every_match_and_strong_vectors_only() -> None:
    rows = [
        mem(1, cosine=0.05, hybrid=0.9, matched=True),
        mem(2, cosine=0.35, hybrid=0.5),
        mem(3, cosine=0.2, hybrid=0.4),
    ]
    assert [row.id for row in gate.quality_gate(rows, 1, vector_floor=0.3)] == [1, 2]
    deep = gate.quality_gate(rows, 1, deep=True, vector_floor=0.3)
    assert [row.id for row in deep] == [1, 2, 3]


def test_hybrid_gate_never_empties_a_small_pool_with_a_lone_match() -> None:
    """The spec's gate drops a lone full-text match in a two-row pool (rrf test); the
    hybrid gate gates what is weak, not what is alone."""
    lone = fusion.fuse_hybrid([], [[mem(1, lexical=0.1, matched=True)]])
    assert gate.quality_gate(lone, 2, vector_floor=0.3) == lone
    assert gate.quality_gate(fusion.fuse_rrf([[], [], [mem(1)]]), 2) == []


def test_the_paraphrase_vector_row_survives_a_one_row_pool() -> None:
    row = fusion.fuse_hybrid([mem(1, cosine=0.372)], [])
    assert gate.quality_gate(row, 1, vector_floor=0.3) == row


def test_hybrid_match_reason_names_the_hybrid_signal_and_autocut_stays_inert() -> None:
    fused = fusion.fuse_hybrid([mem(1, cosine=0.9), mem(2, cosine=0.1)], [])
    reason = rank.match_reason(fused[0])
    assert reason is not None
    assert (reason["signal"], reason.get("cosine")) == ("hybrid", 0.9)
    assert rank.autocut([*fused, mem(3, cosine=0.0, hybrid=0.0)]) == [
        *fused,
        mem(3, cosine=0.0, hybrid=0.0),
    ]


def test_second_stage_adds_coverage_and_phrase_to_the_head_only() -> None:
    fused = [mem(1, hybrid=0.60), mem(2, hybrid=0.55), mem(3, hybrid=0.50)]
    features: dict[Identity, rerank.TextFeatures] = {
        ("mem", 2): rerank.TextFeatures(coverage=1.0, phrase=1.0),
        ("mem", 3): rerank.TextFeatures(coverage=1.0, phrase=1.0),
    }
    out = rerank.rerank(fused, features, "ice cream", depth=2)
    assert [row.id for row in out] == [2, 1, 3]
    assert math.isclose(out[0].hybrid or 0, 0.55 + 0.15 + 0.05)
    assert out[2].hybrid == 0.50  # past the depth: unchanged, and below the head


def test_recency_counts_only_when_the_query_asks_for_it() -> None:
    old = Candidate("mem", 1, "x", timestamp="2023-01-01T00:00:00+00:00", hybrid=0.5)
    new = Candidate("mem", 2, "x", timestamp="2023-06-01T00:00:00+00:00", hybrid=0.45)
    assert [r.id for r in rerank.rerank([old, new], {}, "Where does she work?")] == [1, 2]
    assert [r.id for r in rerank.rerank([old, new], {}, "Where does she work now?")] == [2, 1]
    assert rerank.asks_for_recency("What is the latest version?")
    assert not rerank.asks_for_recency("When did Caroline go camping?")


def test_dates_named_in_a_query_and_their_closeness() -> None:
    assert rerank.date_period("What did Melanie paint on October 13, 2023?") == rerank.Period(
        2023, 10, 13
    )
    assert rerank.date_period("What did Gina find on 1 February, 2023?") == rerank.Period(
        2023, 2, 1
    )
    assert rerank.date_period("When did she go camping in June?") == rerank.Period(None, 6)
    assert rerank.date_period("How often in 2023?") == rerank.Period(2023)
    assert rerank.date_period("Release 2024-02-30 notes") == rerank.Period(2024, 2, 30)
    assert rerank.date_period("What may I do?") is None
    day = rerank.Period(2023, 10, 13)
    assert rerank.date_closeness(day, datetime(2023, 10, 13, 18, tzinfo=UTC)) == 1.0
    assert 0.7 < rerank.date_closeness(day, datetime(2023, 10, 16, tzinfo=UTC)) < 0.75
    assert rerank.date_closeness(day, datetime(2023, 11, 30, tzinfo=UTC)) == 0.0
    assert rerank.date_closeness(rerank.Period(None, 6), datetime(2021, 6, 2, tzinfo=UTC)) == 1.0
    assert (
        rerank.date_closeness(rerank.Period(2024, 2, 30), datetime(2024, 3, 1, tzinfo=UTC)) == 0.0
    )


def test_a_query_naming_a_date_prefers_rows_of_that_day() -> None:
    far = Candidate("mem", 1, "x", timestamp="2023-03-01T10:00:00+00:00", hybrid=0.6)
    near = Candidate("mem", 2, "x", timestamp="2023-05-08T13:56:00+00:00", hybrid=0.5)
    out = rerank.rerank([far, near], {}, "What did Caroline do on 8 May, 2023?")
    assert [row.id for row in out] == [2, 1]
