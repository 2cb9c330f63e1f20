"""The time cue's pure parts (docs/tools.md, "Time cues"): reading a cue, the period and
its margins, the ignored cue, the reciprocal-rank merge and the bounded lift."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, strategies as st

from service.db import recall as recall_queries
from service.errors import InvalidInput
from service.memory.recall import cue, cued
from service.memory.recall.candidate import Identity, MatchReason
from service.memory.recall.records import CueApplied, Recalled

NOW = datetime(2026, 12, 4, 17, 38, tzinfo=UTC)
EMPTY = cue.Span()
SPAN = cue.Span(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC))


def _period(raw: Mapping[str, object], confidence: cue.Confidence | None = None) -> list[str]:
    parsed = cue.parse(raw)
    assert parsed is not None
    window = cue.period(parsed, confidence or parsed.confidence, NOW, SPAN)
    assert window is not None
    return cue.iso(window)


def test_a_date_names_the_whole_utc_day_and_before_includes_its_day() -> None:
    sure = {"after": "2026-03-01", "before": "2026-03-31", "confidence": "sure"}
    assert _period(sure) == ["2026-03-01T00:00:00+00:00", "2026-04-01T00:00:00+00:00"]


def test_margins_are_half_and_the_whole_length_on_each_side() -> None:
    likely = {"after": "2026-03-01", "before": "2026-03-31", "confidence": "likely"}
    assert _period(likely) == ["2026-02-13T12:00:00+00:00", "2026-04-16T12:00:00+00:00"]
    vague = {"after": "2026-03-01", "before": "2026-03-31", "confidence": "vague"}
    assert _period(vague) == ["2026-01-29T00:00:00+00:00", "2026-05-02T00:00:00+00:00"]


def test_timestamps_accept_z_and_offsets_and_a_naive_one_is_utc() -> None:
    raw = {"after": "2026-03-01T10:00:00Z", "before": "2026-03-01T12:00:00+01:00"}
    assert _period({**raw, "confidence": "sure"}) == [
        "2026-03-01T10:00:00+00:00",
        "2026-03-01T11:00:00+00:00",
    ]
    naive = {"after": "2026-03-01T10:00:00", "confidence": "sure"}
    assert _period(naive)[0] == "2026-03-01T10:00:00+00:00"


def test_an_open_end_closes_at_now_or_at_the_scope_oldest() -> None:
    assert _period({"after": "2026-03-01", "confidence": "sure"})[1] == NOW.isoformat()
    assert _period({"before": "2026-03-01", "confidence": "sure"}) == [
        "2026-01-01T00:00:00+00:00",
        "2026-03-02T00:00:00+00:00",
    ]
    parsed = cue.parse({"before": "2026-03-01", "confidence": "sure"})
    assert parsed is not None
    assert cue.period(parsed, "sure", NOW, EMPTY) is None


def test_ago_is_a_unit_long_period_centred_that_long_ago_and_a_month_is_30_days() -> None:
    """The spec's verified example: ``ago 9 months, vague`` at 2026-12-04T17:38."""
    raw = {"ago": {"unit": "months", "value": 9}, "confidence": "vague"}
    assert _period(raw) == ["2026-01-23T17:38:00+00:00", "2026-04-23T17:38:00+00:00"]
    today = {"ago": {"unit": "days", "value": 0}, "confidence": "sure"}
    assert _period(today) == [(NOW - timedelta(hours=12)).isoformat(), NOW.isoformat()]


def test_long_ago_is_the_oldest_third_of_the_span() -> None:
    assert _period({"ago": "long_ago", "confidence": "sure"}) == [
        "2026-01-01T00:00:00+00:00",
        "2026-04-02T00:00:00+00:00",
    ]
    parsed = cue.parse({"ago": "long_ago", "confidence": "sure"})
    assert parsed is not None
    assert cue.period(parsed, "sure", NOW, EMPTY) is None


def test_a_one_instant_period_is_one_second_long() -> None:
    instant = datetime(2026, 2, 2, tzinfo=UTC)
    parsed = cue.parse({"ago": "long_ago", "confidence": "sure"})
    assert parsed is not None
    window = cue.period(parsed, "sure", NOW, cue.Span(instant, instant))
    assert window == (instant, instant + timedelta(seconds=1))


def test_a_period_past_the_representable_range_is_clipped_not_an_error() -> None:
    raw = {"ago": {"unit": "months", "value": 10**12}, "confidence": "vague"}
    parsed = cue.parse(raw)
    assert parsed is not None
    window = cue.period(parsed, "vague", NOW, SPAN)
    assert window is not None
    assert window[0] == datetime.min.replace(tzinfo=UTC)
    early = cue.parse({"after": "0001-01-01", "before": "0001-01-02", "confidence": "vague"})
    assert early is not None
    assert cue.period(early, "vague", NOW, SPAN) is not None


def test_a_cue_for_today_or_later_is_ignored_whatever_its_confidence() -> None:
    for confidence in cue.CONFIDENCES:
        parsed = cue.parse({"after": "2026-12-04", "confidence": confidence})
        assert parsed is not None
        assert cue.recent_only(parsed, NOW, SPAN) is not None
    older = cue.parse({"after": "2026-12-03", "confidence": "sure"})
    assert older is not None
    assert cue.recent_only(older, NOW, SPAN) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"confidence": "sure"}, cue.EITHER),
        ({"after": "2026-01-01", "ago": "long_ago", "confidence": "sure"}, cue.EITHER),
        (
            {"after": "bad", "confidence": "sure"},
            "time_cue.after is not a date or timestamp: 'bad'",
        ),
        (
            {"before": "2026-13-01", "confidence": "sure"},
            "time_cue.before is not a date or timestamp: '2026-13-01'",
        ),
        (
            {"after": "2026-03-02", "before": "2026-03-01", "confidence": "sure"},
            "time_cue.before must be later than time_cue.after",
        ),
        ({}, "time_cue.confidence is required: one of sure, likely, vague"),
        (
            {"after": "2026-01-01", "confidence": "sure", "x": 1},
            "time_cue has unknown fields: ['x']",
        ),
        (
            {"ago": {"unit": "years", "value": 1}, "confidence": "sure"},
            "time_cue.ago.unit must be one of days, weeks, months",
        ),
        (
            {"ago": {"unit": "days", "value": -1}, "confidence": "sure"},
            "time_cue.ago.value must be a whole number, 0 or more",
        ),
        (
            {"after": "2" * 300, "confidence": "sure"},
            "time_cue.after is too long (300 characters, max 256)",
        ),
    ],
)
def test_a_cue_that_cannot_be_read_is_refused_with_a_message_naming_the_part(
    raw: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        cue.parse(raw)
    assert str(refused.value) == message


def test_no_cue_is_none() -> None:
    assert cue.parse(None) is None


def test_the_merge_is_reciprocal_rank_and_a_hole_keeps_its_place() -> None:
    assert cue.reciprocal_rank([["a", "b"], ["b", "c"]]) == ["b", "a", "c"]
    holed: list[list[str | None]] = [[None, "b"], ["a"]]
    assert cue.reciprocal_rank(holed) == ["a", "b"]
    assert cue.reciprocal_rank([[str(n) for n in range(80)]]) == [str(n) for n in range(50)]


def test_the_first_found_row_moves_exactly_bound_places() -> None:
    rows = list("abcdefg")
    order, moved = cue.lift(rows, {"f": 0}, 3, lambda r: r)
    assert order == list("abfcdeg")
    assert moved == 4


def test_a_tie_goes_to_the_found_row() -> None:
    order, _ = cue.lift(list("abcd"), {"d": 0}, 3, lambda r: r)
    assert order == list("dabc")


@given(
    size=st.integers(0, 12),
    found=st.lists(st.integers(0, 11), unique=True, max_size=12),
    bound=st.integers(1, 3),
)
def test_no_row_moves_up_more_than_the_bound_and_none_is_lost(
    size: int, found: list[int], bound: int
) -> None:
    rows = list(range(size))
    ranks = {row: rank for rank, row in enumerate(found) if row < size}
    order, moved = cue.lift(rows, ranks, bound, lambda r: r)
    assert sorted(order) == rows
    assert all(row - order.index(row) <= bound for row in rows)
    assert moved == sum(1 for new, row in enumerate(order) if new != row)
    unfound = [row for row in order if row not in ranks]
    assert unfound == sorted(unfound)


def _hit(n: int) -> recall_queries.Hit:
    return recall_queries.Hit(
        "cue_text", "mem", n, 1.0, 1, f"row {n}", {}, "2026-03-10", "", NOW, None
    )


def _row(n: int) -> Recalled:
    reason: MatchReason = {"signal": "hybrid", "score": 0.5}
    return Recalled("mem", n, f"mem:{n}", f"row {n}", {}, "", "", None, reason)


def test_seats_take_unreached_or_cut_rows_never_refused_ones_and_never_displace() -> None:
    """Rows 1-4 are the answer (best first). The cue arm found 9 (refused by the gate:
    reached, not admitted), 8 (admitted, cut by the limit), 7 and 6 (no arm reached them),
    and 3 (in the answer)."""
    found = cued.CueFound(
        rows=tuple(_hit(n) for n in (9, 8, 3, 7, 6)),
        report=CueApplied(None, "likely", False),
    )
    reached: set[Identity] = {("mem", n) for n in (1, 2, 3, 4, 8, 9)}
    admitted: set[Identity] = {("mem", n) for n in (1, 2, 3, 4, 8)}
    rows, report = cued.apply([_row(n) for n in (1, 2, 3, 4)], found, reached, admitted)
    assert [row.id for row in rows] == [1, 3, 2, 4, 8, 7]
    assert rows[1].match_reason == {"signal": "hybrid", "score": 0.5, "cue_rank": 2}
    assert rows[4].match_reason == {"signal": "cue", "admission": "reservation", "cue_rank": 1}
    assert rows[5].match_reason == {"signal": "cue", "admission": "reservation", "cue_rank": 3}
    assert (report.moved, report.seated, report.confidence) == (2, 2, "likely")


def test_only_a_before_alone_or_long_ago_reads_the_span() -> None:
    def needs(raw: Mapping[str, object]) -> bool:
        parsed = cue.parse(raw)
        assert parsed is not None
        return cue.needs_span(parsed)

    assert needs({"before": "2026-03-01", "confidence": "sure"})
    assert needs({"ago": "long_ago", "confidence": "sure"})
    assert not needs({"after": "2026-03-01", "confidence": "sure"})
    assert not needs({"after": "2026-03-01", "before": "2026-03-02", "confidence": "sure"})
    assert not needs({"ago": {"unit": "days", "value": 3}, "confidence": "sure"})
