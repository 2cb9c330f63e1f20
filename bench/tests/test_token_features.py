"""Pure parts of the token benchmark's response-economy measurements."""

from __future__ import annotations

from typing import Any

from bench.corpora import locomo
from bench.economy import features, paging
from bench.economy.corpus import Span
from bench.harness.client import Reply


def test_content_and_excerpt_characters_of_an_answer() -> None:
    rows: list[dict[str, Any]] = [
        {"content": "abc", "excerpt": "de"},
        {"content": "fgh"},
        {"ref": "mem:1", "seen": True},
    ]
    assert features.text_chars(rows) == (6, 2)
    f = features.Features()
    features.record_answer(f, "x" * 40, rows)
    summary = features.summarise_features(f)
    assert summary["content_share"] == 0.15
    assert summary["memory_text_share"] == 0.2


def test_visibility_against_the_preview_and_the_excerpt() -> None:
    row = {"content": "p" * 500, "excerpt": "e" * 200, "excerpt_offset": 1000}
    assert features.visibility(Span("a", 10, 400), row) == "wholly"
    assert features.visibility(Span("a", 1010, 1150), row) == "wholly"
    assert features.visibility(Span("a", 900, 1300), row) == "fills"
    assert features.visibility(Span("a", 450, 700), row) == "partly"
    assert features.visibility(Span("a", 600, 900), row) == "hidden"
    assert features.visibility(Span("a", 600, 900), {"content": "p" * 500}) == "hidden"


def test_an_excerpt_that_continues_the_preview_shows_a_straddling_turn_wholly() -> None:
    row = {"content": "p" * 500, "excerpt": "e" * 240, "excerpt_offset": 497}
    assert features.visibility(Span("a", 450, 700), row) == "wholly"
    assert features.visibility(Span("a", 450, 900), row) == "fills"
    assert features.visibility(Span("a", 700, 1000), row) == "partly"


def test_the_ceiling_is_what_a_preview_and_one_excerpt_could_show_whole() -> None:
    assert features.could_be_wholly_visible(Span("a", 10, 400), 500, 240)
    assert features.could_be_wholly_visible(Span("a", 450, 740), 500, 240)
    assert not features.could_be_wholly_visible(Span("a", 450, 741), 500, 240)
    assert features.could_be_wholly_visible(Span("a", 900, 1140), 500, 240)
    assert not features.could_be_wholly_visible(Span("a", 900, 1141), 500, 240)


def test_the_judge_reads_the_preview_and_the_excerpt() -> None:
    assert features.judge_text({"content": "a", "excerpt": "b"}) == "a\nb"
    assert features.judge_text({"content": "a"}) == "a\n"


def test_sessions_are_consecutive_questions_of_one_conversation() -> None:
    asked = [locomo.Question(c, n, 1, "q", ()) for c in ("x", "y") for n in range(7)]
    groups = paging.sessions_of(asked)
    assert [len(g) for g in groups] == [5, 2, 5, 2]
    assert all(len({q.sample_id for q in g}) == 1 for g in groups)


def test_the_careful_client_fetches_only_trimmed_rows_of_its_top_two() -> None:
    rows: list[dict[str, Any]] = [
        {"ref": "mem:1", "content_truncated": True},
        {"ref": "mem:2"},
        {"ref": "mem:3", "content_truncated": True},
    ]
    assert paging.trimmed_top(rows) == ["mem:3"]
    assert paging.best_first_refs(rows) == ["mem:3", "mem:2", "mem:1"]


def test_a_page_is_measured_without_its_cursor() -> None:
    reply = Reply("", {"messages": [], "next_cursor": "c" * 400}, 0.0, False)
    assert paging.without_cursor_tokens(reply) == 4  # {"messages":[]} is 15 characters


def test_summaries_of_pages_and_sessions() -> None:
    pages = [{"page_tokens": [480, 300], "first_rows": 3, "cursor_chars": [40], "over_budget": 0,
              "same_order": True}]  # fmt: skip
    budget = features.summarise_pages(pages)
    assert budget["pages"]["mean"] == 2
    assert budget["recalls_whose_pages_differ_from_the_unbudgeted_order"] == 0
    sessions = [{"recalls": 5, "recall_plain": 100, "recall_novel": 80, "recall+fetch_plain": 200,
                 "recall+fetch_novel": 150, "stubs": 3, "rows": 50}]  # fmt: skip
    summary = features.summarise_sessions(sessions)
    assert summary["recall"]["saving"] == 0.2
    assert summary["recall+fetch"]["saving"] == 0.25
