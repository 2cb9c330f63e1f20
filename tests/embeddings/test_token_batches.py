"""How the local model's stored texts are cut into model runs (pure: no model needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from service.embeddings.local import token_batches


def test_similar_lengths_run_together_and_a_long_text_runs_alone() -> None:
    lengths = [200, 10, 12, 11, 90, 95]
    assert token_batches(lengths, size=32, tokens=256) == [[1, 3, 2], [4, 5], [0]]


def test_the_text_count_bounds_a_run_too() -> None:
    assert token_batches([5] * 7, size=3, tokens=256) == [[0, 1, 2], [3, 4, 5], [6]]


def test_a_text_longer_than_the_budget_still_runs() -> None:
    assert token_batches([300, 300], size=32, tokens=256) == [[0], [1]]


def test_no_texts_no_runs() -> None:
    assert token_batches([], size=32, tokens=256) == []


@pytest.mark.parametrize("size", [1, 4, 32])
@given(lengths=st.lists(st.integers(min_value=2, max_value=258), max_size=80))
def test_every_text_runs_once_within_the_bounds(size: int, lengths: list[int]) -> None:
    batches = token_batches(lengths, size=size, tokens=256)
    assert sorted(index for batch in batches for index in batch) == list(range(len(lengths)))
    for batch in batches:
        longest = max(lengths[index] for index in batch)
        assert len(batch) <= size
        assert len(batch) == 1 or len(batch) * longest <= 256
    order = [lengths[index] for batch in batches for index in batch]
    assert order == sorted(order)  # padding is spent only between neighbours in length
