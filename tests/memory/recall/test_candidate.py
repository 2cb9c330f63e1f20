"""``candidate.evolve``: the hot-path copy behaves exactly like ``dataclasses.replace``."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from service.memory.recall.candidate import Candidate, evolve


def _row() -> Candidate:
    return Candidate(
        kind="mem",
        id=7,
        content="Grace prefers COBOL",
        timestamp="2026-05-01T10:00:00+00:00",
        created_at=datetime(2026, 5, 1, tzinfo=UTC),
        cosine=0.4,
        lexical=2.5,
        matched=True,
        recall_count=3,
    )


CHANGES: dict[str, Any] = {
    "kind": "ep",
    "id": 8,
    "content": "other",
    "timestamp": "",
    "created_at": None,
    "cosine": 0.1,
    "lexical": 1.0,
    "rrf": 0.02,
    "rsf": 0.3,
    "confidence": 0.7,
    "hybrid": 0.9,
    "matched": False,
    "cosine_backfilled": True,
    "resolved": True,
    "recall_count": 4,
    "last_recalled_at": datetime(2026, 6, 1, tzinfo=UTC),
    "vector_unseen": True,
}


def test_evolve_gives_the_same_value_as_replace_for_every_field() -> None:
    row = _row()
    assert set(CHANGES) == {field.name for field in dataclasses.fields(Candidate)}
    for name, value in CHANGES.items():
        assert evolve(row, **{name: value}) == dataclasses.replace(row, **{name: value})
    assert evolve(row, **CHANGES) == dataclasses.replace(row, **CHANGES)


def test_evolve_leaves_the_original_unchanged_and_copies_untouched_fields() -> None:
    row = _row()
    changed = evolve(row, hybrid=0.5)
    assert row.hybrid is None
    assert changed.hybrid == 0.5
    assert changed.content == row.content
    assert changed.identity == row.identity


def test_evolve_refuses_an_unknown_field_like_replace() -> None:
    with pytest.raises(TypeError, match="no field"):
        evolve(_row(), hybird=0.5)
