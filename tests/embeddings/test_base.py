from __future__ import annotations

import math

import pytest

from service.embeddings.base import (
    EmbeddingError,
    check_vectors,
    l2_normalise,
    unit_vectors,
)


def test_l2_normalise_scales_to_unit_length() -> None:
    assert l2_normalise([3.0, 4.0]) == pytest.approx([0.6, 0.8])


def test_l2_normalise_survives_components_whose_squares_overflow() -> None:
    assert l2_normalise([1e200, 1e200]) == pytest.approx([math.sqrt(0.5)] * 2)


@pytest.mark.parametrize("vector", [[0.0, 0.0], [math.nan, 1.0], [math.inf, 1.0]])
def test_l2_normalise_rejects_vectors_without_a_direction(vector: list[float]) -> None:
    with pytest.raises(EmbeddingError):
        l2_normalise(vector)


def test_unit_vectors_returns_normalised_vectors_in_order() -> None:
    assert unit_vectors([[2.0, 0.0], [0.0, -5.0]], count=2, dimension=2) == [
        [1.0, 0.0],
        [0.0, -1.0],
    ]


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[1.0, 0.0]], "expected 2 vectors"),
        ([[1.0, 0.0], [1.0]], "dimension 1"),
        ([[1.0, 0.0], [math.nan, 1.0]], "NaN"),
        ([[1.0, 0.0], [-math.inf, 1.0]], "NaN or infinity"),
        ([[1.0, 0.0], [0.0, 0.0]], "zeros"),
    ],
)
def test_check_vectors_rejects_garbage(vectors: list[list[float]], message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        check_vectors(vectors, count=2, dimension=2)
