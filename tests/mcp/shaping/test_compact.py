"""Compact recall rows: the same fields and meanings, nothing printed twice or empty."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.render import recall as render_recall
from service.mcp.shaping import compact, recall
from service.mcp.shaping.rows import Shaped
from service.memory.recall.candidate import MatchReason
from service.memory.recall.confidence import Confidence
from service.memory.recall.records import Echo, Speaker
from tests.mcp.shaping.rows import episode, mem, profile, wire

PROPERTY = settings(database=None, deadline=None, max_examples=200)


def test_scores_keep_four_significant_digits_and_the_signal_is_not_repeated() -> None:
    reason = {"signal": "rrf", "score": 0.016393442622950821, "rrf": 0.016393442622950821,
              "cosine": 0.41234567}  # fmt: skip
    assert compact.compact_reason(reason) == {"signal": "rrf", "score": 0.01639, "cosine": 0.4123}


def test_a_raw_signal_that_differs_from_the_score_stays() -> None:
    reason = {"signal": "rsf", "score": 0.5, "rsf": 0.5, "rrf": 0.0163934}
    assert compact.compact_reason(reason) == {"signal": "rsf", "score": 0.5, "rrf": 0.01639}


def test_a_cosine_that_confidence_already_carries_is_not_repeated() -> None:
    reason = {"signal": "confidence", "score": 0.61, "cosine": 0.41234567}
    assert compact.compact_reason(reason, 0.4123) == {"signal": "confidence", "score": 0.61}


def test_a_rendered_row_does_not_repeat_the_cosine_of_its_confidence() -> None:
    reason: MatchReason = {"signal": "confidence", "score": 0.61, "cosine": 0.41234567}
    row = mem(1, "x", confidence=Confidence(2.5, 0.61, cosine=0.4123), match_reason=reason)
    assert wire(Shaped(row)) == {
        "content": "x",
        "ref": "mem:1",
        "confidence": {"age_hours": 2.5, "score": 0.61, "cosine": 0.4123},
        "match_reason": {"signal": "confidence", "score": 0.61},
    }


@pytest.mark.parametrize(
    ("value", "rounded"),
    [(0.0, 0.0), (1 / 3, 0.3333), (123456.789, 123500.0), (-0.000123456, -0.0001235),
     (math.inf, math.inf)],
)  # fmt: skip
def test_rounding_to_significant_digits(value: float, rounded: float) -> None:
    assert compact.round_significant(value) == rounded


@PROPERTY
@given(st.floats(min_value=1e-9, max_value=1e9))
def test_rounding_never_moves_a_score_by_more_than_one_part_in_two_thousand(value: float) -> None:
    assert math.isclose(compact.round_significant(value), value, rel_tol=5e-4)


def test_empty_fields_and_an_anonymous_source_are_omitted() -> None:
    row = mem(1, "x", source={}, timestamp="", msg_id="")
    assert wire(Shaped(row)) == {"content": "x", "ref": "mem:1"}


def test_empty_fields_inside_a_source_are_omitted_and_the_rest_kept() -> None:
    row = mem(1, "x", source={"type": "User", "id": "u1", "name": ""})
    assert wire(Shaped(row))["source"] == {"type": "User", "id": "u1"}
    turn = Echo("y", Speaker("User", "", "U"), "")
    assert wire(Shaped(turn))["source"] == {"type": "User", "name": "U"}


def test_an_episode_does_not_repeat_its_fixed_source_but_the_profile_keeps_its_own() -> None:
    odd = mem(4, "z", source={"System": "episode"})
    assert "source" not in wire(Shaped(episode(4, "[Episode] x")))
    assert wire(Shaped(profile("[Profile] y")))["source"] == {"System": "profile"}
    assert wire(Shaped(odd))["source"] == {"System": "episode"}


def test_content_and_timestamp_are_kept_exactly_even_when_empty_or_odd() -> None:
    row = mem(1, "", timestamp="8:56 pm on 8 May, 2023")
    assert wire(Shaped(row)) == {"ref": "mem:1", "content": "", "timestamp": row.timestamp}


def test_the_compact_row_keeps_the_full_rows_key_order() -> None:
    """The MCP end-to-end suites pin the bytes: the keys come in the full form's order."""
    reason: MatchReason = {"signal": "rrf", "score": 0.1}
    source = {"type": "User", "id": "u1"}
    row = mem(1, "x", source=source, timestamp="t", msg_id="m",
              confidence=Confidence(1.0, 0.5), match_reason=reason)  # fmt: skip
    full = list(render_recall.row(row))
    assert list(wire(Shaped(row))) == full
    assert list(wire(Shaped(row, 0))) == [*full, "content_truncated", "content_len"]


def test_compact_rows_keep_the_seed_contract_of_previews() -> None:
    """Pure prefix, markers only when trimmed (the seed's load-bearing rules)."""
    long_row = mem(1, "a" * 900, match_reason={"signal": "rrf", "score": 0.1, "rrf": 0.1})
    short_row = mem(2, "b" * 500)
    shaped, _ = recall.shape_rows(
        [long_row, short_row], preview_chars=500, full_content=False, query="a"
    )
    first, second = (wire(row) for row in shaped)
    assert first == {
        "ref": "mem:1",
        "content": "a" * 500,
        "content_truncated": True,
        "content_len": 900,
        "match_reason": {"signal": "rrf", "score": 0.1},
    }
    assert second == {"ref": "mem:2", "content": "b" * 500}


def test_compaction_does_not_mutate_the_library_rows() -> None:
    row = mem(1, "x", source={"type": "User", "id": ""},
              match_reason={"signal": "rrf", "score": 0.123456, "rrf": 0.123456})  # fmt: skip
    before = repr(row)
    wire(Shaped(row))
    assert repr(row) == before
