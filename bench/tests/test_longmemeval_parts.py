"""Pure parts of the LongMemEval runner: the question files as conversations, the
round-robin pick over types, and the session and turn scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.harness.serving import BenchError
from bench.quality import longmemeval


def record(question_id: str, kind: str) -> dict[str, Any]:
    return {
        "question_id": question_id,
        "question_type": kind,
        "question": "Where did I park?",
        "answer_session_ids": ["s2"],
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hello"}],
            [
                {"role": "user", "content": "I parked on level 3", "has_answer": True},
                {"role": "assistant", "content": "Noted."},
            ],
        ],
    }


def test_questions_are_picked_round_robin_over_types(tmp_path: Path) -> None:
    for n, (qid, kind) in enumerate([("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c")]):
        (tmp_path / f"{40 + n}_{qid}.json").write_text(json.dumps(record(qid, kind)))
    (tmp_path / "manifest.json").write_text("{}")
    picked = longmemeval.load(tmp_path, 3)
    assert [conv.sample_id for conv, _ in picked] == ["a1", "b1", "c1"]
    conv = picked[0][0]
    assert [t.dia_id for t in conv.turns] == ["s1#0", "s2#0", "s2#1"]
    assert conv.turns[1].content == "user: I parked on level 3"
    assert conv.turns[1].timestamp == "2023/05/21 (Sun) 10:00"
    assert conv.questions[0].relevant == ("s2#0",)


def test_sessions_are_ranked_by_their_first_row_and_turns_scored_alone() -> None:
    scores = longmemeval._scores(["s1#0", "s2#1", "s2#0"], ["s2#0"], record("q", "a"))
    assert scores["recall_any5"] == 1.0
    assert scores["session_ndcg10"] == pytest.approx(1 / 1.5849625, abs=1e-4)
    assert scores["turn_ndcg10"] == pytest.approx(0.5, abs=1e-4)
    missed = longmemeval._scores(["s1#0"], ["s2#0"], record("q", "a"))
    assert (missed["recall_any5"], missed["session_ndcg10"], missed["turn_ndcg10"]) == (0, 0, 0)


def test_env_variants_are_name_value_pairs() -> None:
    pairs = longmemeval._settings(["CPERSONA_X=3", " CPERSONA_Y = a=b "])
    assert pairs == [("CPERSONA_X", "3"), ("CPERSONA_Y", "a=b")]
    with pytest.raises(BenchError, match="NAME=VALUE"):
        longmemeval._settings(["CPERSONA_X"])


def test_gold_ranks_are_read_per_configuration(tmp_path: Path) -> None:
    from bench.quality import lme_ranks

    (tmp_path / "43_q1.json").write_text(json.dumps(record("q1", "a")))
    (rec,) = lme_ranks.load_ids(tmp_path, ["q1"])
    rows = [{"id": "s1#0", "chars": 5, "reason": None}, {"id": "s2#0", "chars": 19, "reason": {}}]
    report = lme_ranks._report([rec], {"fused": {"q1": rows}, "none": {"q1": rows[:1]}})
    assert report["q1"]["gold"]["s2#0"] == {
        "fused": {"rank": 2, "reason": {}},
        "none": {"rank": None, "reason": None},
    }
