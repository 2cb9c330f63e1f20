"""The length-neutral score of a record with passages (``memory.recall.passage_gain``;
docs/architecture.md, "Passages"): the best of ``n`` cosines less what the best of ``n``
unrelated ones gains on average."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, datetime

import pytest

from service.db.recall import Hit, PassageMatch
from service.memory.recall.passage_gain import expected_max, neutral


def _hit(channel: str, parts: int, score: float | None, cosine: float | None) -> Hit:
    return Hit(
        channel, "mem", parts + 1, score, 1, "text", {}, "", "", datetime(2026, 1, 1, tzinfo=UTC),
        None, cosine, passage=PassageMatch(0, 10, 0.5) if parts else None, parts=parts,
    )  # fmt: skip


def test_expected_max_is_the_mean_best_of_n_normal_draws() -> None:
    assert expected_max(0) == expected_max(1) == 0.0
    rng = random.Random(5)
    for n in (2, 4, 16):
        sampled = statistics.fmean(max(rng.gauss() for _ in range(n)) for _ in range(20_000))
        assert expected_max(n) == pytest.approx(sampled, abs=0.05)


def test_an_unrelated_long_record_scores_like_a_short_one_on_average() -> None:
    """Cosines of unrelated text drawn with the model's spread: the best of 8 passages,
    neutralised, has the mean of one draw (raw, it is a spread and more above it)."""
    rng = random.Random(9)
    spread, mean = 0.07, 0.12
    raw = [max(rng.gauss(mean, spread) for _ in range(8)) for _ in range(20_000)]
    hits = [_hit("vector", 8, c, c) for c in raw]
    lowered = [h.score or 0.0 for h in neutral(hits, spread)]
    assert statistics.fmean(raw) - mean > spread
    assert statistics.fmean(lowered) == pytest.approx(mean, abs=0.01)


def test_only_records_of_several_passages_change_and_spread_zero_is_raw() -> None:
    hits = [
        _hit("vector", 0, 0.5, 0.5),
        _hit("vector", 1, 0.5, 0.5),
        _hit("vector", 4, 0.5, 0.5),
        _hit("memory_text", 4, 3.2, 0.5),
        _hit("memory_text", 4, 3.2, None),
    ]
    out = neutral(hits, 0.07)
    gain = 0.07 * expected_max(4)
    assert out[:2] == hits[:2]
    assert out[2].score == out[2].cosine == pytest.approx(0.5 - gain)
    assert out[3].score == 3.2
    assert out[3].cosine == pytest.approx(0.5 - gain)
    assert out[4] == hits[4]
    assert out[2].passage == hits[2].passage  # the excerpt's passage cosine stays raw
    assert neutral(hits, 0.0) == hits
