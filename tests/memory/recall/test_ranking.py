"""Unit tests of the recall ranking maths (service.memory.scoring), against
(docs/tools.md, "How recall works") numbers.

Pure: no database, no clock (every time is relative to the fixed ``NOW``). Expected values
are derived from the documented formulas and the CPersona reference's acceptance items (23, 23a,
24-26, 28-31), not read back from the implementation.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from service.memory.recall import confidence, fusion, gate, penalty, rank, time
from service.memory.recall.candidate import PROFILE_ID, CalibratedGate, Candidate, Tunables
from service.memory.recall.rank import RecallContext
from service.memory.recall.time import TimeSpan

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
NO_EXAMPLE_DB = settings(database=None)


def mem(ident: int, **signals: Any) -> Candidate:
    return Candidate("mem", ident, f"memory {ident}", **signals)


def ep(ident: int, **signals: Any) -> Candidate:
    return Candidate("ep", ident, f"[Episode] episode {ident}", **signals)


def profile(**signals: Any) -> Candidate:
    return Candidate("profile", PROFILE_ID, "[Profile] likes tea", **signals)


def ago(hours: float) -> str:
    return (NOW - timedelta(hours=hours)).isoformat()


def ids(rows: list[Candidate] | tuple[Candidate, ...]) -> list[tuple[str, int]]:
    return [row.identity for row in rows]


def ctx(pool: int, **overrides: Any) -> RecallContext:
    return RecallContext(pool_size=pool, limit=overrides.pop("limit", 10), now=NOW, **overrides)


# --- timestamps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "2026-05-01T02:00:00Z",
        "2026-05-01T02:00:00+00:00",
        "2026-05-01T02:00:00",
        "2026-05-01 02:00:00",
        "2026-05-01T11:00:00+09:00",
        " 2026-05-01T02:00:00z ",
    ],
)
def test_parse_timestamp_normalises_to_aware_utc(text: str) -> None:
    assert time.parse_timestamp(text) == datetime(2026, 5, 1, 2, 0, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "   ", "yesterday", "2026-13-45T99:99:99Z", "Z"])
def test_parse_timestamp_returns_none_for_unparseable_text(text: str) -> None:
    assert time.parse_timestamp(text) is None


def test_time_span_is_width_and_age_of_the_newest_row() -> None:
    span = time.time_span(NOW - timedelta(days=51), NOW - timedelta(days=21), NOW)
    assert span == TimeSpan(range_hours=720.0, newest_age_hours=504.0)


def test_time_span_without_bounds_is_empty() -> None:
    assert time.time_span(None, NOW, NOW) == TimeSpan()
    assert time.time_span(NOW, None, NOW) == TimeSpan()


# --- mode dispatch and vector floor (docs/tools.md, "Recall steps"; docs/tools.md, "Retrievers")


@pytest.mark.parametrize(
    ("configured", "query", "expected"),
    [
        ("rrf", "tea", "rrf"),
        ("rsf", "tea", "rsf"),
        ("cascade", "tea", "cascade"),
        ("bogus", "tea", "cascade"),
        ("rrf", "  \n", "cascade"),
        ("rsf", "", "cascade"),
    ],
)
def test_recall_mode_falls_back_to_cascade(configured: str, query: str, expected: str) -> None:
    assert fusion.recall_mode(configured, query) == expected


def test_vector_min_similarity_is_loosened_only_for_fusion() -> None:
    assert fusion.vector_min_similarity(0.3, "cascade") == 0.3
    assert fusion.vector_min_similarity(0.3, "rrf") == pytest.approx(0.15)
    assert fusion.vector_min_similarity(0.3, "rsf", factor=0.25) == pytest.approx(0.075)


# --- rrf fusion (docs/tools.md, "Fusion modes") ---------------------------------------------------


def test_rrf_single_channel_scores_are_one_over_k_plus_rank_plus_one() -> None:
    fused = fusion.fuse_rrf([[mem(1), mem(2)]], k=60)
    assert [row.rrf for row in fused] == [1 / 61, 1 / 62]


def test_rrf_rank_zero_in_all_three_channels_is_the_max_scale() -> None:
    fused = fusion.fuse_rrf([[mem(1)], [mem(1)], [mem(1)]], k=60)
    assert len(fused) == 1
    assert fused[0].rrf == pytest.approx(3 / 61)
    assert fusion.rrf_max_scale(60) == pytest.approx(0.04918, abs=1e-5)


def test_rrf_excluded_row_still_consumes_its_position() -> None:
    fused = fusion.fuse_rrf([[None, mem(2)]])
    assert ids(fused) == [("mem", 2)]
    assert fused[0].rrf == 1 / 62


def test_rrf_identity_is_kind_and_id() -> None:
    fused = fusion.fuse_rrf([[mem(1)], [ep(1)]])
    assert ids(fused) == [("mem", 1), ("ep", 1)]
    assert [row.rrf for row in fused] == [1 / 61, 1 / 61]


def test_rrf_ties_keep_first_seen_order() -> None:
    assert ids(fusion.fuse_rrf([[mem(1)], [mem(2)]])) == [("mem", 1), ("mem", 2)]
    assert ids(fusion.fuse_rrf([[mem(2)], [mem(1)]])) == [("mem", 2), ("mem", 1)]


def test_rrf_sorts_by_summed_score_descending() -> None:
    fused = fusion.fuse_rrf([[mem(2), mem(1)], [mem(1)]])
    assert ids(fused) == [("mem", 1), ("mem", 2)]
    assert fused[0].rrf == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_keeps_the_first_occurrence_so_a_vector_hit_keeps_its_cosine() -> None:
    fused = fusion.fuse_rrf([[ep(3, cosine=0.8)], [ep(3, lexical=2.0)]])
    assert fused[0].cosine == 0.8
    assert fused[0].rrf == pytest.approx(2 / 61)


def test_rrf_appends_profiles_last_without_a_score() -> None:
    fused = fusion.fuse_rrf([[mem(1)]], profiles=[profile()])
    assert ids(fused) == [("mem", 1), ("profile", PROFILE_ID)]
    assert fused[1].rrf is None


def test_rrf_k_has_a_floor_of_one() -> None:
    assert fusion.fuse_rrf([[mem(1)]], k=0)[0].rrf == 1 / 2
    assert fusion.rrf_max_scale(0) == 1.5


# --- rsf fusion -----------------------------------------------------------------


def test_normalise_channel_maps_min_to_zero_and_max_to_one() -> None:
    assert fusion.normalise_channel([0.9, 0.5, 0.7]) == pytest.approx([1.0, 0.0, 0.5])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([None, None], [1.0, 1.0]),
        ([0.4], [1.0]),
        ([0.3, 0.3, 0.3], [1.0, 1.0, 1.0]),
        ([2.0, None, 1.0], [1.0, 0.0, 0.0]),
        ([], []),
    ],
)
def test_normalise_channel_edge_cases(raw: list[float | None], expected: list[float]) -> None:
    assert fusion.normalise_channel(raw) == expected


def test_rsf_divides_by_the_number_of_non_empty_channels() -> None:
    vector = [mem(1, cosine=0.9), mem(2, cosine=0.5)]
    lexical = [[], [mem(2, lexical=3.0), mem(3, lexical=1.0)]]
    fused = fusion.fuse_rsf(vector, lexical)
    assert ids(fused) == [("mem", 1), ("mem", 2), ("mem", 3)]
    assert [row.rsf for row in fused] == pytest.approx([0.5, 0.5, 0.0])


def test_rsf_like_fallback_channel_votes_full_weight() -> None:
    fused = fusion.fuse_rsf([], [[mem(1), mem(2)]])
    assert [row.rsf for row in fused] == [1.0, 1.0]


def test_rsf_excluded_rows_take_no_part_in_normalisation() -> None:
    vector = [None, mem(1, cosine=0.5), mem(2, cosine=0.3)]
    fused = fusion.fuse_rsf(vector, [[None]])
    assert [row.rsf for row in fused] == pytest.approx([1.0, 0.0])


def test_rsf_all_hole_channel_counts_as_empty() -> None:
    fused = fusion.fuse_rsf([None, None], [[mem(1, lexical=5.0), mem(2, lexical=1.0)]])
    assert [row.rsf for row in fused] == pytest.approx([1.0, 0.0])


def test_rsf_appends_profiles_last() -> None:
    fused = fusion.fuse_rsf([mem(1, cosine=0.4)], profiles=[profile()])
    assert ids(fused)[-1] == ("profile", PROFILE_ID)
    assert fused[-1].rsf is None


# --- cascade --------------------------------------------------------------------


def test_cascade_keeps_stage_order_and_adds_no_fusion_score() -> None:
    rows = fusion.cascade([mem(3, cosine=0.6)], [ep(1)], [profile()], [mem(1), mem(2)], limit=10)
    assert ids(rows) == [("mem", 3), ("ep", 1), ("profile", PROFILE_ID), ("mem", 1), ("mem", 2)]
    assert all(row.rrf is None and row.rsf is None for row in rows)


def test_cascade_deduplicates_by_identity_keeping_the_earlier_stage() -> None:
    rows = fusion.cascade([ep(1, cosine=0.7)], [ep(1), ep(2)], [], [mem(1)], limit=10)
    assert ids(rows) == [("ep", 1), ("ep", 2), ("mem", 1)]
    assert rows[0].cosine == 0.7


def test_cascade_keyword_rows_fill_only_the_remaining_slots() -> None:
    rows = fusion.cascade([mem(5, cosine=0.6)], [ep(1)], [profile()], [mem(1), mem(2)], 4)
    assert ids(rows) == [("mem", 5), ("ep", 1), ("profile", PROFILE_ID), ("mem", 1)]


def test_cascade_keyword_hole_uses_up_its_slot() -> None:
    rows = fusion.cascade([mem(5, cosine=0.6)], [], [], [None, mem(1), mem(2)], limit=3)
    assert ids(rows) == [("mem", 5), ("mem", 1)]


def test_cascade_episode_excluded_from_vector_is_still_admitted_by_episode_fts() -> None:
    vector = fusion.mark_excluded([ep(1, cosine=0.7), mem(2, cosine=0.6)], lambda r: r.kind == "ep")
    rows = fusion.cascade(vector, [ep(1)], [], [], limit=10)
    assert ids(rows) == [("mem", 2), ("ep", 1)]
    assert rows[1].cosine is None


def test_mark_excluded_keeps_positions() -> None:
    marked = fusion.mark_excluded([mem(1), mem(2), mem(3)], lambda r: r.id == 2)
    assert marked == [mem(1), None, mem(3)]


# --- heuristic gate threshold (docs/tools.md, "Quality gate") -------------------------------------


@pytest.mark.parametrize(
    ("n", "expected"),
    [(-5, 0.5), (0, 0.5), (1, 0.4665), (2, 0.447), (61, 0.3008), (498, 0.2001), (499, 0.2)],
)
def test_heuristic_min_score(n: int, expected: float) -> None:
    assert gate.heuristic_min_score(n) == expected


def test_heuristic_min_score_bottoms_out_at_point_two() -> None:
    assert gate.heuristic_min_score(100_000) == 0.2


def test_heuristic_min_score_is_halved_by_deep() -> None:
    assert gate.heuristic_min_score(2, deep=True) == pytest.approx(0.2235)
    assert gate.heuristic_min_score(0, deep=True) == 0.25


# --- episode boundary penalty (docs/tools.md, "Episode boundary penalty") -------------------------


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        (ago(100), 0.5),
        (ago(10), math.exp(-0.1)),
        (ago(0.5), math.exp(-0.005)),
        (ago(60), math.exp(-0.6)),
        (ago(70), 0.5),
        (ago(0), 1.0),
        (ago(-5), 1.0),
        (ago(-0.5), 1.0),
        ("", 1.0),
        ("not a time", 1.0),
        ("2026-05-01T02:00:00Z", math.exp(-0.1)),
        ("2026-05-01T02:00:00", math.exp(-0.1)),
        ("2026-05-01T11:00:00+09:00", math.exp(-0.1)),
    ],
)
def test_episode_penalty_factor(timestamp: str, expected: float) -> None:
    assert penalty.episode_penalty_factor(timestamp, NOW) == pytest.approx(expected)


def test_episode_penalty_factor_is_one_without_a_boundary() -> None:
    assert penalty.episode_penalty_factor(ago(100), None) == 1.0


def test_episode_penalty_factor_takes_a_naive_boundary_as_utc() -> None:
    naive_boundary = NOW.replace(tzinfo=None)
    assert penalty.episode_penalty_factor(ago(10), naive_boundary) == pytest.approx(math.exp(-0.1))


def test_episode_penalty_factor_respects_rate_and_floor() -> None:
    assert penalty.episode_penalty_factor(ago(10), NOW, rate=0.02, floor=0.1) == pytest.approx(
        math.exp(-0.2)
    )
    assert penalty.episode_penalty_factor(ago(200), NOW, rate=0.02, floor=0.1) == 0.1


def test_penalty_resorts_an_rrf_list_exempts_episodes_and_sinks_the_profile() -> None:
    old, new = mem(1, timestamp=ago(100)), mem(2, timestamp=ago(-1))
    episode = ep(7, timestamp=ago(200))
    fused = fusion.fuse_rrf([[old, new], [episode]], profiles=[profile()])
    assert ids(fused) == [("mem", 1), ("ep", 7), ("mem", 2), ("profile", PROFILE_ID)]

    out = penalty.apply_episode_penalty(fused, NOW)

    assert ids(out) == [("ep", 7), ("mem", 2), ("mem", 1), ("profile", PROFILE_ID)]
    assert [row.rrf for row in out[:3]] == pytest.approx([1 / 61, 1 / 62, 0.5 / 61])


def test_penalty_scales_cosine_rrf_and_rsf() -> None:
    row = mem(1, timestamp=ago(10), cosine=0.8, rrf=0.02, rsf=0.6, lexical=3.0)
    (out,) = penalty.apply_episode_penalty([row], NOW)
    factor = math.exp(-0.1)
    assert (out.cosine, out.rrf, out.rsf) == pytest.approx(
        (0.8 * factor, 0.02 * factor, 0.6 * factor)
    )
    assert out.lexical == 3.0


def test_penalty_leaves_order_to_confidence_when_confidence_is_on() -> None:
    rows = [mem(1, timestamp=ago(100), rrf=1 / 61), mem(2, timestamp=ago(-1), rrf=1 / 62)]
    out = penalty.apply_episode_penalty(rows, NOW, confidence_enabled=True)
    assert ids(out) == [("mem", 1), ("mem", 2)]
    assert out[0].rrf == pytest.approx(0.5 / 61)


def test_penalty_keeps_cascade_stage_order() -> None:
    rows = [mem(1, timestamp=ago(100), cosine=0.9), mem(2, timestamp=ago(-1))]
    out = penalty.apply_episode_penalty(rows, NOW)
    assert ids(out) == [("mem", 1), ("mem", 2)]
    assert out[0].cosine == pytest.approx(0.45)


def test_penalty_resorts_by_rsf_when_rows_carry_no_rrf() -> None:
    rows = [mem(1, timestamp=ago(100), rsf=0.8), mem(2, timestamp=ago(-1), rsf=0.6)]
    out = penalty.apply_episode_penalty(rows, NOW)
    assert ids(out) == [("mem", 2), ("mem", 1)]


def test_penalty_does_not_resort_when_nothing_was_penalised() -> None:
    rows = [mem(1, timestamp=ago(-1), rrf=1 / 62), mem(2, timestamp=ago(-2), rrf=1 / 61)]
    assert penalty.apply_episode_penalty(rows, NOW) == rows


def test_penalty_without_boundary_changes_nothing() -> None:
    rows = [mem(1, timestamp=ago(100), rrf=1 / 61)]
    assert penalty.apply_episode_penalty(rows, None) == rows


# --- quality gate ---------------------------------------------------------------


@pytest.mark.parametrize(("n", "kept"), [(5, False), (49, False), (50, True), (1000, True)])
def test_gate_keeps_the_profile_only_from_a_pool_of_fifty(n: int, kept: bool) -> None:
    out = gate.quality_gate([profile(confidence=1.0)], n, deep=True)
    assert (len(out) == 1) is kept


def test_gate_drops_a_lone_rank_zero_fts_hit_in_a_two_row_pool_unless_deep() -> None:
    (row,) = fusion.fuse_rrf([[mem(1)]])
    threshold = gate.heuristic_min_score(2) * fusion.rrf_max_scale(60)
    assert threshold == pytest.approx(0.02198, abs=1e-5)
    assert gate.quality_gate([row], 2) == []
    assert gate.quality_gate([row], 2, deep=True) == [row]


def test_gate_keeps_a_lexical_match_the_vector_channel_could_not_see() -> None:
    """Issue 10 (4): rows stored while the embedder was down have no vector, so their
    rrf can come from full text only and a small pool's gate dropped even an exact
    match. Marked rows pass whatever their score; unmarked ones keep the spec's gate."""
    fused = fusion.fuse_rrf([[mem(1, cosine=0.9)], [], [mem(2), mem(3)]])
    marked = gate.mark_vector_unseen(fused, {("mem", 3)})
    assert [(row.id, row.vector_unseen) for row in marked] == [(1, False), (2, False), (3, True)]
    assert [row.id for row in gate.quality_gate(marked, 2)] == [1, 3]
    assert [row.id for row in gate.quality_gate(fused, 2)] == [1]
    episode = fusion.fuse_rrf([[ep(7)]])
    lone = gate.mark_vector_unseen(episode, {("ep", 7)})
    assert gate.quality_gate(lone, 2) == lone
    assert gate.mark_vector_unseen(episode, {("mem", 7)}) == episode  # kinds never mix


def test_marking_never_lets_the_profile_skip_its_pool_rule() -> None:
    row = profile()
    assert gate.quality_gate(gate.mark_vector_unseen([row], {row.identity}), 49) == []


def test_gate_at_pool_61_keeps_single_channel_rows_down_to_rank_six() -> None:
    fused = fusion.fuse_rrf([[mem(i) for i in range(10)]])
    assert [row.id for row in gate.quality_gate(fused, 61)] == list(range(7))


@pytest.mark.parametrize(
    ("n", "query_empty", "kept"),
    [(2, True, True), (2, False, False), (99, False, False), (100, False, True)],
)
def test_gate_keeps_unscored_rows_only_for_empty_queries_or_big_pools(
    n: int, query_empty: bool, kept: bool
) -> None:
    out = gate.quality_gate([mem(1)], n, query_empty=query_empty)
    assert (out == [mem(1)]) is kept


def test_gate_judges_a_vector_hit_on_cosine_not_rrf() -> None:
    weak_cosine = mem(1, cosine=0.3, rrf=3 / 61)
    fair_cosine = mem(2, cosine=0.447, rrf=1 / 1000)
    assert gate.quality_gate([weak_cosine, fair_cosine], 2) == [fair_cosine]


def test_gate_prefers_rsf_over_cosine_and_confidence_over_both() -> None:
    rows = [
        mem(1, rsf=0.5, cosine=0.1),
        mem(2, rsf=0.4, cosine=0.9),
        mem(3, confidence=0.3, rsf=0.9, cosine=0.9),
        mem(4, confidence=0.45, cosine=0.1),
    ]
    assert [row.id for row in gate.quality_gate(rows, 2)] == [1, 4]


def test_calibrated_rrf_gate_is_compared_on_the_raw_rrf_scale() -> None:
    row = mem(1, rrf=1 / 61)
    assert gate.quality_gate([row], 2, gate=CalibratedGate(0.01, "rrf")) == [row]
    assert gate.quality_gate([row], 2, gate=CalibratedGate(0.02, "rrf")) == []


def test_calibrated_gate_applies_only_to_its_own_signal() -> None:
    rrf_row = mem(1, rrf=1 / 61)
    assert gate.quality_gate([rrf_row], 2, gate=CalibratedGate(0.0, "cosine")) == []
    cos_row = mem(2, cosine=0.5)
    assert gate.quality_gate([cos_row], 2, gate=CalibratedGate(0.6, "cosine")) == []
    assert gate.quality_gate([cos_row], 2, gate=CalibratedGate(0.5, "cosine")) == [cos_row]


def test_deep_halves_the_calibrated_gate() -> None:
    row = mem(1, cosine=0.3)
    calibrated = CalibratedGate(0.6, "cosine")
    assert gate.quality_gate([row], 1000, gate=calibrated) == []
    assert gate.quality_gate([row], 1000, gate=calibrated, deep=True) == [row]


def test_gate_threshold_uses_the_rrf_scale_only_on_the_rrf_branch() -> None:
    assert gate.gate_threshold("rrf", 0.5, None, 60) == pytest.approx(0.5 * 3 / 61)
    assert gate.gate_threshold("cosine", 0.5, None, 60) == 0.5
    assert gate.gate_threshold("rsf", 0.5, CalibratedGate(0.7, "rsf"), 60) == 0.7


# --- gate_fallback (docs/tools.md, "Gate fallback") -----------------------------------------------


def test_gate_fallback_rescues_backfilled_rows_in_confidence_order() -> None:
    low = mem(1, cosine=0.1, cosine_backfilled=True, confidence=0.2)
    high = mem(2, cosine=0.15, cosine_backfilled=True, confidence=0.3)
    vector_hit = mem(3, cosine=0.3, confidence=0.4)
    assert gate.gate_fallback([low, vector_hit, high], []) == [high, low]


def test_gate_fallback_brings_the_profile_along_only_if_it_passed() -> None:
    backfilled = mem(1, cosine=0.1, cosine_backfilled=True, confidence=0.2)
    prof = profile(confidence=0.9)
    assert gate.gate_fallback([backfilled, prof], [prof]) == [prof, backfilled]
    assert gate.gate_fallback([backfilled, prof], []) == [backfilled]


def test_gate_fallback_does_not_apply_when_a_row_survived_or_nothing_was_backfilled() -> None:
    backfilled = mem(1, cosine=0.1, cosine_backfilled=True, confidence=0.2)
    survivor = mem(2, cosine=0.9, confidence=0.9)
    assert gate.gate_fallback([backfilled, survivor], [survivor]) is None
    assert gate.gate_fallback([survivor], []) is None


# --- autocut (docs/tools.md, "Autocut") -----------------------------------------------------------


def test_autocut_is_inert_on_rrf_and_rsf_lists() -> None:
    # vector hits in rrf mode carry a cosine too: inert because of the rrf score alone
    rrf_rows = [
        mem(1, rrf=3 / 61, cosine=0.9),
        mem(2, rrf=1 / 200, cosine=0.3),
        mem(3, rrf=0.01, cosine=0.25),
    ]
    rsf_rows = [mem(1, rsf=1.0, cosine=0.9), mem(2, rsf=0.1, cosine=0.3), mem(3, rsf=0.0)]
    assert rank.autocut(rrf_rows) == rrf_rows
    assert rank.autocut(rsf_rows) == rsf_rows


def test_autocut_cuts_a_cosine_list_at_the_largest_gap() -> None:
    rows = [mem(i, cosine=c) for i, c in enumerate([0.9, 0.85, 0.5, 0.45])]
    assert [row.id for row in rank.autocut(rows)] == [0, 1]


def test_autocut_keeps_a_list_whose_largest_gap_is_below_the_ratio() -> None:
    rows = [mem(i, cosine=c) for i, c in enumerate([0.9, 0.85, 0.8, 0.7])]
    assert rank.autocut(rows) == rows
    assert [row.id for row in rank.autocut(rows, min_gap_ratio=0.1)] == [0, 1, 2]


def test_autocut_is_inert_on_a_cascade_list_with_unscored_rows() -> None:
    rows = [mem(1, cosine=0.9), ep(2), mem(3)]
    assert rank.autocut(rows) == rows


def test_autocut_keeps_lists_shorter_than_min_results() -> None:
    rows = [mem(1, cosine=0.9), mem(2, cosine=0.1)]
    assert rank.autocut(rows) == rows
    assert rank.autocut(rows, min_results=2) == rows[:1]
    assert rank.autocut(rows[:1], min_results=0) == rows[:1]


def test_autocut_keys_on_confidence_when_the_first_row_has_one() -> None:
    rows = [mem(1, confidence=0.9, rrf=0.01), mem(2, confidence=0.3), mem(3, confidence=0.25)]
    assert rank.autocut(rows) == rows[:1]


def test_autocut_does_nothing_with_a_non_positive_top_score() -> None:
    rows = [mem(1, cosine=0.0), mem(2, cosine=-0.5), mem(3, cosine=-0.6)]
    assert rank.autocut(rows) == rows


# --- confidence (docs/tools.md, "Confidence scoring") ---------------------------------------------


def score(row: Candidate, *, deep: bool = False, span: TimeSpan | None = None) -> float:
    return confidence.confidence_score(row, now=NOW, deep=deep, span=span or TimeSpan()).score


def test_confidence_of_a_fresh_ceiling_cosine_row_is_one() -> None:
    conf = confidence.confidence_score(mem(1, timestamp=ago(0), cosine=0.75), now=NOW)
    assert conf == confidence.Confidence(age_hours=0.0, score=1.0, cosine=0.75)


def test_confidence_combines_normalised_cosine_and_time_decay() -> None:
    # norm = (0.475 - 0.2) / 0.55 = 0.5; decay = 1 / (1 + 100 * 0.005) = 2/3
    conf = confidence.confidence_score(mem(1, timestamp=ago(100), cosine=0.475), now=NOW)
    assert conf.age_hours == 100.0
    assert conf.score == round(math.sqrt(0.5 * 2 / 3), 4) == 0.5774


def test_confidence_decay_slows_for_wide_corpora() -> None:
    # range 336 h: rate = 0.005 / (336 / 168) = 0.0025 → decay = 1 / 1.25 = 0.8
    row = mem(1, timestamp=ago(100), cosine=0.75)
    assert score(row, span=TimeSpan(range_hours=336.0)) == round(math.sqrt(0.8), 4)
    # a narrow range uses max(24, range) / 168 < 1 → the plain rate
    assert score(row, span=TimeSpan(range_hours=12.0)) == round(math.sqrt(2 / 3), 4)


def test_confidence_decay_range_is_floored_at_min_time_range_hours() -> None:
    # min range 336 h lifts a 12 h range to 336 h: rate = 0.005 / 2 → decay(100 h) = 0.8
    tunables = Tunables(min_time_range_hours=336.0)
    row = mem(1, timestamp=ago(100), cosine=0.75)
    conf = confidence.confidence_score(
        row, now=NOW, span=TimeSpan(range_hours=12.0), tunables=tunables
    )
    assert conf.score == round(math.sqrt(0.8), 4)


def test_confidence_without_cosine_is_the_square_root_of_the_decay_floor_when_old() -> None:
    assert score(mem(1, timestamp=ago(10_000))) == round(math.sqrt(0.3), 4)


def test_recall_count_raises_the_decay_floor_and_the_boost_fades() -> None:
    boost = math.log(5) * 0.02
    fresh_boost = mem(1, timestamp=ago(10_000), recall_count=4)
    faded = mem(
        1, timestamp=ago(10_000), recall_count=4, last_recalled_at=NOW - timedelta(hours=500)
    )
    assert score(fresh_boost) == round(math.sqrt(0.3 + boost), 4)
    assert score(faded) == round(math.sqrt(0.3 + boost / 2), 4)


def test_recall_boosted_floor_is_capped_at_decay_ceil() -> None:
    assert score(mem(1, timestamp=ago(10_000), recall_count=1_000_000)) == round(math.sqrt(0.5), 4)


def test_episodes_never_read_memory_recall_stats() -> None:
    row = ep(1, timestamp=ago(10_000), recall_count=4, last_recalled_at=NOW - timedelta(minutes=1))
    assert score(row) == round(math.sqrt(0.3), 4)


def test_resolved_episode_is_damped_unless_deep() -> None:
    row = ep(1, timestamp=ago(0), resolved=True)
    assert score(row) == 0.3
    assert score(row, deep=True) == 1.0
    info = confidence.confidence_score(row, now=NOW).as_dict()
    assert info == {"age_hours": 0.0, "score": 0.3, "resolved": True}


@pytest.mark.parametrize(("minutes", "expected"), [(0, 0.7), (2, 0.7), (5, 1.0), (60, 1.0)])
def test_recently_recalled_memory_is_penalised(minutes: float, expected: float) -> None:
    row = mem(1, timestamp=ago(0), cosine=0.75, last_recalled_at=NOW - timedelta(minutes=minutes))
    assert score(row) == expected
    assert score(row, deep=True) == 1.0


def test_deep_disables_time_decay() -> None:
    assert score(mem(1, timestamp=ago(10_000), cosine=0.475), deep=True) == round(math.sqrt(0.5), 4)


@pytest.mark.parametrize(("cosine", "expected"), [(0.1, 0.0), (0.2, 0.0), (0.95, 1.0)])
def test_confidence_clamps_the_normalised_cosine(cosine: float, expected: float) -> None:
    assert score(mem(1, timestamp=ago(0), cosine=cosine)) == expected


def test_unknown_age_is_imputed_mid_range_with_an_anchor() -> None:
    span = TimeSpan(range_hours=720.0, newest_age_hours=504.0)
    conf = confidence.confidence_score(mem(1, timestamp="garbage"), now=NOW, span=span)
    assert conf.age_hours == 864.0
    assert conf.age_unknown is True


@pytest.mark.parametrize(("range_hours", "expected_age"), [(48.0, 24.0), (0.0, 12.0), (10.0, 12.0)])
def test_unknown_age_without_anchor_is_half_of_max_24_and_range(
    range_hours: float, expected_age: float
) -> None:
    conf = confidence.confidence_score(mem(1), now=NOW, span=TimeSpan(range_hours=range_hours))
    assert conf.age_hours == expected_age
    assert conf.as_dict()["age_unknown"] is True


def test_confidence_rounds_age_to_one_and_cosine_to_four_places() -> None:
    row = mem(1, timestamp=(NOW - timedelta(minutes=76)).isoformat(), cosine=0.123456)
    info = confidence.confidence_score(row, now=NOW).as_dict()
    assert info == {"age_hours": 1.3, "score": 0.0, "cosine": 0.1235}


def test_confidence_accepts_a_naive_now_as_utc() -> None:
    row = mem(1, timestamp=ago(100), cosine=0.475)
    naive = confidence.confidence_score(row, now=NOW.replace(tzinfo=None))
    assert naive == confidence.confidence_score(row, now=NOW)


def test_score_confidence_sets_scores_and_resorts() -> None:
    rows = [mem(1, timestamp=ago(0), cosine=0.3), mem(2, timestamp=ago(0), cosine=0.7)]
    out = confidence.score_confidence(rows, now=NOW)
    assert ids(out) == [("mem", 2), ("mem", 1)]
    assert [row.confidence for row in out] == [score(rows[1]), score(rows[0])]


def test_backfill_marks_only_rows_that_had_no_cosine() -> None:
    rows = [mem(1), mem(2, cosine=0.9), mem(3)]
    out = confidence.backfill_cosines(rows, {("mem", 1): 0.4, ("mem", 2): 0.1})
    assert out[0] == mem(1, cosine=0.4, cosine_backfilled=True)
    assert out[1:] == rows[1:]


# --- match_reason (docs/tools.md, "Recall rows") and finalize -------------------------------------


def test_match_reason_of_a_rank_zero_fts_hit() -> None:
    (row,) = fusion.fuse_rrf([[], [], [mem(1)]])
    assert rank.match_reason(row) == {"signal": "rrf", "score": 1 / 61, "rrf": 1 / 61}


def test_match_reason_of_a_vector_hit_in_rrf_mode_is_cosine() -> None:
    fused = fusion.fuse_rrf([[mem(1, cosine=0.62)], [], [mem(2)]])
    assert rank.match_reason(fused[0]) == {
        "signal": "cosine",
        "score": 0.62,
        "cosine": 0.62,
        "rrf": 1 / 61,
    }
    assert rank.match_reason(fused[1]) == {"signal": "rrf", "score": 1 / 61, "rrf": 1 / 61}


def test_match_reason_signal_precedence() -> None:
    rsf_row = mem(1, rsf=0.4, cosine=0.8)
    assert rank.match_reason(rsf_row) == {
        "signal": "rsf",
        "score": 0.4,
        "rsf": 0.4,
        "cosine": 0.8,
    }
    conf_row = mem(2, confidence=0.7, cosine=0.8, rrf=0.01)
    reason = rank.match_reason(conf_row)
    assert reason is not None
    assert (reason["signal"], reason["score"]) == ("confidence", 0.7)


def test_match_reason_is_absent_on_unscored_rows() -> None:
    assert rank.match_reason(mem(1)) is None
    assert rank.match_reason(profile()) is None


@pytest.mark.parametrize(("limit", "expected"), [(2, [1, 2]), (5, [1, 2, 3]), (0, []), (-1, [])])
def test_finalize_cuts_to_the_limit_best_first(limit: int, expected: list[int]) -> None:
    rows = [mem(1), mem(2), mem(3)]
    assert [row.id for row in rank.finalize(rows, limit)] == expected


# --- the whole ranking (steps 5, 7-9 of docs/tools.md, "Recall steps") ----------------------------


def test_rank_two_row_pool_hides_a_lone_fts_hit_unless_deep() -> None:
    rows = fusion.fuse_rrf([[], [], [mem(1)]])
    assert rank.rank(rows, ctx(2)).rows == ()
    deep = rank.rank(rows, ctx(2, deep=True)).rows
    assert ids(deep) == [("mem", 1)]
    assert rank.match_reason(deep[0]) == {"signal": "rrf", "score": 1 / 61, "rrf": 1 / 61}


def test_rank_empty_query_lists_recent_rows_without_match_reason() -> None:
    rows = fusion.cascade([], [], [], [mem(2), mem(1)], limit=10)
    ranked = rank.rank(rows, ctx(2, query_empty=True))
    assert ids(ranked.rows) == [("mem", 2), ("mem", 1)]
    assert all(rank.match_reason(row) is None for row in ranked.rows)


def test_rank_shows_the_profile_first_only_from_a_pool_of_fifty() -> None:
    rows = fusion.fuse_rrf([[mem(1), mem(2)]], profiles=[profile()])
    assert ("profile", PROFILE_ID) not in ids(rank.rank(rows, ctx(5, deep=True)).rows)
    ranked = rank.rank(rows, ctx(60)).rows
    assert ranked[-1].is_profile
    assert ids(ranked[:-1]) == [("mem", 1), ("mem", 2)]


def test_rank_scores_are_non_increasing_best_first() -> None:
    rows = fusion.fuse_rrf([[mem(i) for i in range(5)], [], [mem(4), mem(9), mem(0)]])
    ranked = rank.rank(rows, ctx(1000)).rows
    scores = [reason["score"] for row in ranked if (reason := rank.match_reason(row))]
    assert len(scores) == 6
    assert scores == sorted(scores, reverse=True)


def test_rank_never_reports_gate_fallback_with_confidence_off() -> None:
    rows = [mem(1, cosine=0.05, cosine_backfilled=True)]
    ranked = rank.rank(rows, ctx(2))
    assert ranked == rank.Ranked(rows=(), gate_fallback=False)
    assert all(row.confidence is None for row in rank.rank(rows, ctx(2, deep=True)).rows)


def test_rank_rescues_backfilled_rows_with_confidence_on() -> None:
    tunables = Tunables(confidence_enabled=True)
    rows = [
        mem(1, timestamp=ago(0), cosine=0.22, cosine_backfilled=True),
        mem(2, timestamp=ago(0), cosine=0.25, cosine_backfilled=True),
    ]
    ranked = rank.rank(rows, ctx(2), tunables)
    assert ranked.gate_fallback is True
    assert ids(ranked.rows) == [("mem", 2), ("mem", 1)]


@pytest.mark.parametrize(
    ("hours", "pool", "deep", "factor"),
    [(100, 1000, True, 0.5), (10, 61, False, math.exp(-0.1))],
)
def test_rank_penalised_rank_zero_row_reports_factor_over_61(
    hours: float, pool: int, deep: bool, factor: float
) -> None:
    rows = fusion.fuse_rrf([[], [], [mem(1, timestamp=ago(hours))]])
    (row,) = rank.rank(rows, ctx(pool, deep=deep, episode_boundary=NOW)).rows
    reason = rank.match_reason(row)
    assert reason is not None
    assert reason["rrf"] == pytest.approx(factor / 61)


def test_rank_autocuts_a_homogeneous_cosine_cascade_unless_disabled() -> None:
    vector = [mem(i, cosine=c) for i, c in enumerate([0.9, 0.85, 0.5, 0.45])]
    rows = fusion.cascade(vector, [], [], [], limit=10)
    assert [row.id for row in rank.rank(rows, ctx(1000)).rows] == [0, 1]
    uncut = rank.rank(rows, ctx(1000), Tunables(autocut_enabled=False)).rows
    assert [row.id for row in uncut] == [0, 1, 2, 3]


def test_rank_cuts_to_the_limit() -> None:
    rows = fusion.fuse_rrf([[mem(1), mem(2), mem(3)]])
    assert [row.id for row in rank.rank(rows, ctx(1000, limit=2)).rows] == [1, 2]


# --- properties ------------------------------------------------------------------------


def _first_occurrences(channel: list[int | None]) -> list[int | None]:
    """A retriever never returns one row twice; holes may repeat."""
    seen: set[int] = set()
    out: list[int | None] = []
    for i in channel:
        if i is None:
            out.append(None)
        elif i not in seen:
            seen.add(i)
            out.append(i)
    return out


channel_ids = st.lists(st.one_of(st.none(), st.integers(0, 15)), max_size=12).map(
    _first_occurrences
)


@NO_EXAMPLE_DB
@given(st.lists(channel_ids, max_size=3), st.integers(1, 200))
def test_rrf_scores_are_non_increasing_and_bounded(
    channels: list[list[int | None]], k: int
) -> None:
    fused = fusion.fuse_rrf(
        [[None if i is None else mem(i) for i in channel] for channel in channels], k
    )
    assert all(row.rrf is not None for row in fused)
    scores = [row.rrf or 0.0 for row in fused]
    assert all(0 < s <= len(channels) / (k + 1) + 1e-12 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len(set(ids(fused))) == len(fused)


@NO_EXAMPLE_DB
@given(st.lists(st.integers(0, 50), max_size=30), st.integers(-5, 40))
def test_finalize_is_a_prefix_no_longer_than_limit(ranks: list[int], limit: int) -> None:
    rows = [mem(i) for i in ranks]
    out = rank.finalize(rows, limit)
    assert len(out) <= max(0, limit)
    assert out == rows[: len(out)]


@NO_EXAMPLE_DB
@given(
    st.floats(-1000, 10_000),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_penalty_factor_stays_between_floor_and_one(
    hours: float, rate: float, floor: float
) -> None:
    factor = penalty.episode_penalty_factor(ago(hours), NOW, rate=rate, floor=floor)
    assert floor <= factor <= 1.0


@NO_EXAMPLE_DB
@given(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), max_size=20))
def test_normalised_channel_values_lie_in_the_unit_interval(raw: list[float | None]) -> None:
    out = fusion.normalise_channel(raw)
    assert len(out) == len(raw)
    assert all(0.0 <= v <= 1.0 for v in out)
    assert not out or max(out) == 1.0


@NO_EXAMPLE_DB
@given(st.integers(-10, 5000), st.integers(0, 50))
def test_heuristic_min_score_is_bounded_and_non_increasing(n: int, step: int) -> None:
    here, further = gate.heuristic_min_score(n), gate.heuristic_min_score(n + step)
    assert 0.2 <= further <= here <= 0.5
