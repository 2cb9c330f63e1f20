"""Pure parts of the LoCoMo benchmark: the data model, variants, answers and their scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.corpora import locomo as locomo_data
from bench.harness import serving as harness
from bench.quality import metrics as locomo_metrics, variants as locomo_variants

SAMPLE: dict[str, Any] = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Ann",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Later."}],
        "session_2_date_time": "10:04 am on 19 December, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi!"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Look", "blip_caption": "a dog"},
        ],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
    },
    "qa": [
        {"question": "Who?", "answer": "Bob", "evidence": ["D1:2"], "category": 4},
        {"question": "Nothing?", "answer": "x", "evidence": ["D9:9"], "category": 1},
        {"question": "When?", "answer": "Dec", "evidence": ["D2:1; D1:1"], "category": 2},
    ],
}


def test_conversation_of_orders_sessions_and_keeps_questions_with_evidence() -> None:
    conv = locomo_data.conversation_of(SAMPLE, None)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conv.turns[1].content == "Bob: Look [shares a photo: a dog]"
    assert conv.turns[2].timestamp == "2023-12-19T10:04:00+00:00"
    assert [(q.number, q.category, q.relevant) for q in conv.questions] == [
        (0, 4, ("D1:2",)),
        (2, 2, ("D2:1", "D1:1")),
    ]
    assert len(locomo_data.conversation_of(SAMPLE, 1).questions) == 1


def test_load_reads_the_first_samples(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([SAMPLE, {**SAMPLE, "sample_id": "conv-u"}]))
    convs = locomo_data.load(path, 1, None)
    assert [c.sample_id for c in convs] == ["conv-t"]
    assert len(locomo_data.questions_of(locomo_data.load(path, None, 1))) == 2


def test_pooled_puts_every_conversation_in_one_agent_with_distinct_ids() -> None:
    convs = [locomo_data.conversation_of({**SAMPLE, "sample_id": s}, None) for s in ("a", "b")]
    one = locomo_data.pooled(convs)
    assert one.sample_id == locomo_data.POOLED_AGENT
    assert [t.dia_id for t in one.turns][:4] == ["a/D1:1", "a/D1:2", "a/D2:1", "b/D1:1"]
    assert len({t.dia_id for t in one.turns}) == 6
    assert [(q.sample_id, q.number, q.relevant) for q in one.questions] == [
        ("pooled", 0, ("a/D1:2",)),
        ("pooled", 1, ("a/D2:1", "a/D1:1")),
        ("pooled", 2, ("b/D1:2",)),
        ("pooled", 3, ("b/D2:1", "b/D1:1")),
    ]


def test_variants_for_modes_tuning_and_names() -> None:
    assert [v.name for v in locomo_variants.variants_for("none", True, [])] == ["default", "deep"]
    tuned = locomo_variants.variants_for("local", True, [])
    assert len(tuned) == 2 + len(locomo_variants.TUNING_VARIANTS)
    picked = locomo_variants.variants_for("none", False, [" rsf ", "deep"])
    assert [v.name for v in picked] == ["deep", "rsf"]  # catalogue order
    with pytest.raises(harness.BenchError, match="unknown variant"):
        locomo_variants.variants_for("local", False, ["nope"])


def _question(number: int = 0, relevant: tuple[str, ...] = ("D1:2",)) -> locomo_data.Question:
    return locomo_data.Question("conv-t", number, 4, "Who?", relevant)


def test_answer_of_reverses_rows_and_maps_aliases() -> None:
    body = {
        "messages": [
            {"id": "D1:1", "match_reason": {"fts": 1}},
            {"id": "D1:3", "match_reason": {"cosine": 0.8}},
        ],
        "gate_fallback": True,
    }
    answer = locomo_metrics.answer_of(_question(), body, 0.01, False, {"conv-t/D1:3": "D1:2"})
    assert answer.ranked == ("D1:2", "D1:1")
    assert answer.vector_rows == (True, False)
    assert answer.gate_fallback
    empty = locomo_metrics.answer_of(_question(), {"error": "x"}, 0.0, True, {})
    assert (empty.ranked, empty.failed) == ((), True)


def test_evaluate_and_diagnostics() -> None:
    hit = locomo_metrics.Answer(_question(0), ("D1:2", "D1:1"), (True, False), 0.02, False, False)
    miss = locomo_metrics.Answer(_question(1), (), (), 0.04, True, False)
    result = locomo_metrics.evaluate([hit, miss], wall_s=1.0)
    assert result["metrics"]["overall"]["ndcg"] == 0.5
    assert result["metrics"]["single-hop"]["count"] == 2
    d = result["diagnostics"]
    assert (d["queries"], d["failed"], d["zero_rows"], d["fewer_than_10_rows"]) == (2, 1, 1, 2)
    assert (d["mean_rows"], d["rows_with_cosine_share"]) == (1.0, 0.5)
    assert (d["relevant_rows"], d["relevant_rows_with_cosine"]) == (1, 1)
    assert result["latency"]["count"] == 2
    rows = locomo_metrics.per_question([hit])
    assert rows == [
        {
            "sample": "conv-t",
            "q": 0,
            "cat": 4,
            "relevant": ["D1:2"],
            "ranked": ["D1:2", "D1:1"],
            "cosine": [1, 0],
            "ms": 20.0,
        }
    ]


def test_the_variants_table_has_one_alignment_per_column() -> None:
    from bench.quality import report as locomo_report

    metrics = {"ndcg": 0.5, "recall": 0.6, "hit": 0.7, "mrr": 0.4, "count": 3}
    variant = {
        "name": "default",
        "env": {"CPERSONA_RECALL_MODE": "hybrid"},
        "deep": False,
        "metrics": {"overall": metrics, "macro": metrics},
        "diagnostics": {
            "fewer_than_10_rows": 1,
            "short_with_matches": 0,
            "zero_rows": 0,
            "mean_rows": 9.9,
            "rows_with_cosine_share": 0.5,
            "relevant_rows_with_cosine": 2,
            "relevant_rows": 3,
        },
        "latency": {"p50_ms": 10.0, "p95_ms": 20.0},
    }
    lines = locomo_report.tuning_table({"modes": [{"mode": "local", "variants": [variant]}]})
    header, align, row = lines[0], lines[1], lines[2]
    assert header.count("|") == align.count("|") == row.count("|")
    assert "| local | default | RECALL_MODE=hybrid | 0.500 |" in row
