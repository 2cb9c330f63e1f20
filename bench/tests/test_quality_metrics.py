"""The LoCoMo protocol and retrieval metrics of bench/quality/scoring.py (pure functions)."""

from __future__ import annotations

import math

import pytest

from bench.quality import scoring as quality

VALID = {"D8:6", "D9:17", "D30:5", "D11:26", "D1:3", "D1:10", "D2:1"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D30:05"], ["D30:5"]),
        (["D:11:26"], ["D11:26"]),
        (["D"], []),
        (["D1:3", "D1:10"], ["D1:3", "D1:10"]),
        (["D1:3,D2:1 D1:3"], ["D1:3", "D2:1"]),
        (["D1:99"], []),  # past the end of the session: not in the sample
        (["D1:3", "D1:03"], ["D1:3"]),
        ([""], []),
    ],
)
def test_normalise_evidence(raw: list[str], expected: list[str]) -> None:
    assert quality.normalise_evidence(raw, VALID) == expected


def test_normalise_evidence_keeps_ten_not_one() -> None:
    assert quality.normalise_evidence(["D1:10"], VALID) == ["D1:10"]
    assert quality.normalise_evidence(["D1:010"], VALID) == ["D1:10"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00+00:00"),
        ("10:04 am on 19 December, 2023", "2023-12-19T10:04:00+00:00"),
        ("12:09 am on 1 January, 2022", "2022-01-01T00:09:00+00:00"),
        ("12:30 pm on 15 July,  2023", "2023-07-15T12:30:00+00:00"),
    ],
)
def test_session_timestamp(text: str, expected: str) -> None:
    assert quality.session_timestamp(text) == expected


def test_session_timestamp_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="does not match"):
        quality.session_timestamp("yesterday")


def test_turn_content_with_and_without_caption() -> None:
    plain = {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"}
    photo = {**plain, "blip_caption": "a photo of a dog", "img_url": ["x"]}
    assert quality.turn_content(plain) == "Caroline: Hey Mel!"
    assert quality.turn_content(photo) == "Caroline: Hey Mel! [shares a photo: a photo of a dog]"
    assert quality.turn_content({**plain, "blip_caption": ""}) == "Caroline: Hey Mel!"


def _dcg(positions: list[int]) -> float:
    return sum(1 / math.log2(p + 2) for p in positions)


def test_ndcg_perfect_and_empty() -> None:
    assert quality.ndcg_at_k(["a", "b"], {"a", "b"}) == pytest.approx(1.0)
    assert quality.ndcg_at_k(["x", "y"], {"a"}) == 0.0
    assert quality.ndcg_at_k([], {"a"}) == 0.0


def test_ndcg_position_and_ideal_length() -> None:
    # one relevant at rank 3 (0-based 2), two relevant in total: ideal has 2 hits
    got = quality.ndcg_at_k(["x", "y", "a", "z"], {"a", "b"})
    assert got == pytest.approx(_dcg([2]) / _dcg([0, 1]))


def test_ndcg_ideal_is_capped_at_k() -> None:
    relevant = {f"r{i}" for i in range(15)}
    ranked = [f"r{i}" for i in range(10)]
    assert quality.ndcg_at_k(ranked, relevant, k=10) == pytest.approx(1.0)


def test_ndcg_ignores_rows_past_k_and_repeats() -> None:
    assert quality.ndcg_at_k(["x", "a"], {"a"}, k=1) == 0.0
    repeated = quality.ndcg_at_k(["a", "a"], {"a", "b"})
    assert repeated == pytest.approx(_dcg([0]) / _dcg([0, 1]))


def test_recall_and_hit() -> None:
    assert quality.recall_at_k(["a", "x", "b"], {"a", "b", "c", "d"}) == pytest.approx(0.5)
    assert quality.recall_at_k(["x", "a"], {"a"}, k=1) == 0.0
    assert quality.hit_at_k(["x", "a"], {"a"}) == 1.0
    assert quality.hit_at_k(["x", "a"], {"a"}, k=1) == 0.0


@pytest.mark.parametrize("metric", [quality.ndcg_at_k, quality.recall_at_k, quality.hit_at_k])
def test_metrics_refuse_questions_without_evidence(metric: object) -> None:
    assert callable(metric)
    with pytest.raises(ValueError, match="no relevant"):
        metric(["a"], set())


def test_summarise_micro_and_macro() -> None:
    one = quality.Scores(1.0, 1.0, 1.0)
    zero = quality.Scores(0.0, 0.0, 0.0)
    summary = quality.summarise([(1, one), (4, zero), (4, zero), (4, zero)])
    assert summary["multi-hop"].count == 1
    assert summary["single-hop"].ndcg == 0.0
    assert summary["overall"].ndcg == pytest.approx(0.25)  # micro: 1 of 4 questions
    assert summary["macro"].ndcg == pytest.approx(0.5)  # mean of the two categories
    assert summary["macro"].count == 4
    assert list(summary) == ["multi-hop", "single-hop", "overall", "macro"]


def test_summarise_nothing() -> None:
    summary = quality.summarise([])
    assert summary["overall"].count == 0
    assert math.isnan(summary["overall"].ndcg)
    assert "macro" not in summary


def test_bm25_prefers_rare_terms_and_skips_non_matching() -> None:
    docs = [
        ("d1", "Caroline: I went to the support group yesterday."),
        ("d2", "Caroline: Caroline Caroline lunch."),
        ("d3", "Melanie: pottery class today"),
    ]
    index = quality.Bm25Index(docs, stopwords={"the", "to", "i"})
    assert index.rank("When did Caroline go to the support group?") == ["d1", "d2"]
    assert index.rank("pottery", k=1) == ["d3"]
    assert index.rank("unrelated words") == []


def test_bm25_scores_are_best_first() -> None:
    docs = [("a", "red apple"), ("b", "red red apple pie"), ("c", "green pear")]
    scores = quality.Bm25Index(docs).scores("red apple", k=5)
    assert list(scores) == quality.Bm25Index(docs).rank("red apple", k=5)
    values = list(scores.values())
    assert values == sorted(values, reverse=True)
    assert "c" not in scores


def test_fuse_rrf_equal_and_weighted() -> None:
    lexical, vector = ["a", "b", "c"], ["c", "d", "a"]
    # a: 1/61 + 1/63, c: 1/63 + 1/61 (tie, a seen first), b: 1/62, d: 1/62
    assert quality.fuse_rrf([lexical, vector]) == ["a", "c", "b", "d"]
    assert quality.fuse_rrf([lexical, vector], weights=[1.0, 3.0])[0] == "c"
    assert quality.fuse_rrf([lexical, vector], depth=1) == ["a", "c"]


def test_fuse_rrf_k_changes_the_balance() -> None:
    lexical, vector = ["a", "x1", "x2", "x3", "b"], ["b", "y1", "y2", "y3", "y4"]
    # b is first in one list and fifth in the other; a only first in one list
    assert quality.fuse_rrf([lexical, vector], k=1)[0] == "b"
    assert quality.fuse_rrf([lexical, vector], k=1, weights=[3.0, 1.0])[0] == "a"


def test_fuse_scores_normalises_each_channel() -> None:
    lexical = {"a": 10.0, "b": 5.0, "c": 0.0}
    vector = {"c": 0.9, "b": 0.8, "a": 0.1}
    # a: 1 + 0, b: 0.5 + 0.875, c: 0 + 1 (tie with a, a seen first)
    assert quality.fuse_scores([lexical, vector]) == ["b", "a", "c"]
    assert quality.fuse_scores([lexical, vector], weights=[1.0, 0.0])[0] == "a"
    assert quality.fuse_scores([lexical, vector], weights=[0.0, 1.0])[0] == "c"
    assert quality.fuse_scores([{"only": 2.0}, {}]) == ["only"]
