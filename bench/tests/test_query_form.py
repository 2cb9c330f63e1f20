"""The query-form benchmark on a small conversation of LoCoMo's shape, with the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.quality import query_form
from service.extras import local_embeddings_installed

pytestmark = pytest.mark.skipif(
    not local_embeddings_installed(), reason="the optional 'local' embedding extra is absent"
)

FACTS = [
    ("D1:1", "Ann", "I adopted a grey kitten called Miso last week."),
    ("D1:2", "Ben", "My sister moved to Lisbon for a job at a bakery."),
    ("D1:3", "Ann", "The quarterly report is due on Friday, so I am busy."),
    ("D1:4", "Ben", "I ran my first half marathon in two hours and five minutes."),
]
QUESTIONS = [
    ("What is the name of Ann's cat?", "D1:1"),
    ("Where did Ben's sister move?", "D1:2"),
    ("How long did Ben's half marathon take?", "D1:4"),
]


def _sample_file(tmp_path: Path) -> Path:
    turns = [{"speaker": who, "dia_id": dia, "text": text} for dia, who, text in FACTS]
    sample = {
        "sample_id": "conv-t",
        "conversation": {"session_1": turns, "session_1_date_time": "1:56 pm on 8 May, 2023"},
        "qa": [{"question": q, "evidence": [dia], "category": 1} for q, dia in QUESTIONS],
    }
    path = tmp_path / "sample.json"
    path.write_text(json.dumps([sample]))
    return path


def test_a_short_run_reports_speed_agreement_and_quality_for_both_forms(tmp_path: Path) -> None:
    out = tmp_path / "query-form.json"
    query_form.main(["--data", str(_sample_file(tmp_path)), "--rounds", "1", "--out", str(out)])
    results = json.loads(out.read_text())
    speed = results["speed_ms_per_query"]
    assert [row["batch"] for row in speed] == list(query_form.BATCH_SIZES)
    assert all(row["shipped_ms"] > 0 and row["query_form_ms"] > 0 for row in speed)
    agreement = results["agreement_cosine"]
    assert agreement["questions"] == len(QUESTIONS)
    assert agreement["min"] >= 0.98
    for form in ("shipped", "query_form"):
        overall = results["vector_only_quality"][form]["overall"]
        assert overall["count"] == len(QUESTIONS)
        assert overall["ndcg"] == 1.0  # each question's own fact ranks first
