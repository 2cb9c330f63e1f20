"""Compact recall rows: the same fields and meanings, nothing printed twice or empty."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.shaping import compact, recall

PROPERTY = settings(database=None, deadline=None, max_examples=200)


def test_scores_keep_four_significant_digits_and_the_signal_is_not_repeated() -> None:
    reason = {"signal": "rrf", "score": 0.016393442622950821, "rrf": 0.016393442622950821,
              "cosine": 0.41234567}  # fmt: skip
    assert compact.compact_reason(reason) == {"signal": "rrf", "score": 0.01639, "cosine": 0.4123}


def test_a_raw_signal_that_differs_from_the_score_stays() -> None:
    reason = {"signal": "rsf", "score": 0.5, "rsf": 0.5, "rrf": 0.0163934}
    assert compact.compact_reason(reason) == {"signal": "rsf", "score": 0.5, "rrf": 0.01639}


def test_a_cosine_that_confidence_already_carries_is_not_repeated() -> None:
    confidence = {"age_hours": 2.5, "cosine": 0.4123, "score": 0.61}
    reason = {"signal": "confidence", "score": 0.61, "cosine": 0.41234567}
    assert compact.compact_reason(reason, confidence) == {"signal": "confidence", "score": 0.61}


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
    row: dict[str, object] = {
        "content": "x",
        "ref": "mem:1",
        "source": {},
        "timestamp": "",
        "id": None,
    }
    assert compact.compact_row(row) == {"content": "x", "ref": "mem:1"}


def test_empty_fields_inside_a_source_are_omitted_and_the_rest_kept() -> None:
    row = {"ref": "mem:1", "content": "x", "source": {"type": "User", "id": "u1", "name": ""}}
    assert compact.compact_row(row)["source"] == {"type": "User", "id": "u1"}


def test_an_episode_does_not_repeat_its_fixed_source_but_the_profile_keeps_its_own() -> None:
    episode = {"ref": "ep:4", "content": "[Episode] x", "source": {"System": "episode"}}
    profile = {"content": "[Profile] y", "source": {"System": "profile"}}
    odd = {"ref": "mem:4", "content": "z", "source": {"System": "episode"}}
    assert "source" not in compact.compact_row(episode)
    assert compact.compact_row(profile)["source"] == {"System": "profile"}
    assert compact.compact_row(odd)["source"] == {"System": "episode"}


def test_content_and_timestamp_are_kept_exactly_even_when_empty_or_odd() -> None:
    row = {"ref": "mem:1", "content": "", "timestamp": "8:56 pm on 8 May, 2023"}
    assert compact.compact_row(row) == row


def test_compact_rows_keep_the_seed_contract_of_previews() -> None:
    """Pure prefix, markers only when trimmed (the seed's load-bearing rules)."""
    long_row = {"ref": "mem:1", "content": "a" * 900, "source": {}, "match_reason": {
        "signal": "rrf", "score": 0.1, "rrf": 0.1}}  # fmt: skip
    short_row = {"ref": "mem:2", "content": "b" * 500, "source": {}}
    shaped, _ = recall.shape_rows(
        [long_row, short_row], preview_chars=500, full_content=False, query="a"
    )
    first, second = shaped
    assert first == {
        "ref": "mem:1",
        "content": "a" * 500,
        "content_truncated": True,
        "content_len": 900,
        "match_reason": {"signal": "rrf", "score": 0.1},
    }
    assert second == {"ref": "mem:2", "content": "b" * 500}


def test_compaction_does_not_mutate_the_library_rows() -> None:
    row = {"ref": "mem:1", "content": "x", "source": {"type": "User", "id": ""},
           "match_reason": {"signal": "rrf", "score": 0.123456, "rrf": 0.123456}}  # fmt: skip
    before = repr(row)
    compact.compact_row(row)
    assert repr(row) == before
