"""Pure parts of the offline excerpt benchmark's reference locators."""

from __future__ import annotations

import collections

import pytest

from bench.economy import excerpts as offline
from bench.economy.corpus import PREVIEW_CHARS, Memory, Span


def case_of(turns: list[str], evidence: int, query: str = "where did they go") -> offline.Case:
    """A row of ``turns`` (the first fills the preview) whose turn ``evidence`` answers."""
    spans, at = [], 0
    for n, turn in enumerate(turns):
        spans.append(Span(f"D1:{n}", at, at + len(turn)))
        at += len(turn) + 1
    memory = Memory("D1:0..", "\n".join(turns), "", True, tuple(spans))
    return offline.Case(memory, query, spans[evidence], [memory.content])


def test_z_scores_fuse_channels_of_different_scales_equally() -> None:
    assert offline.standardised([1.0, 1.0]) == [0.0, 0.0]
    assert offline.standardised([0.0, 2.0]) == pytest.approx([-1.0, 1.0])
    # a lexical score ten times larger weighs no more than the vector's small spread
    assert offline.pick(offline.fused([0.0, 10.0, 0.0], [0.4, 0.6, 0.5])) == 1
    assert offline.pick(offline.fused([0.0, 10.0, 0.0], [0.9, 0.1, 0.5])) == 0
    assert offline.pick([0.0, 0.0]) == 0  # the earliest on a tie


def test_lexical_scores_cover_only_turns_past_the_preview() -> None:
    case = case_of(["x" * PREVIEW_CHARS, "they went to Paris", "nothing here"], 1, "Paris trip")
    assert [line.dia_id for line in case.lines] == ["D1:1", "D1:2"]
    scores = offline.lexical_line_scores(case)
    assert scores[0] > 0
    assert scores[1] == 0


def test_a_question_turn_hands_over_to_its_answer() -> None:
    case = case_of(["x" * PREVIEW_CHARS, "Where did you go?", "Paris, last May."], 2)
    assert offline.answer_after_question(case, [1.0, 0.0]) == 1
    assert offline.answer_after_question(case, [0.0, 0.0]) == 0  # no match: no hand-over


def test_an_excerpt_on_a_turn_that_straddles_the_preview_starts_at_the_cut_word() -> None:
    case = case_of(["x" * (PREVIEW_CHARS - 10) + " long turn here", "short"], 0)
    offset, length = offline.placed(case, case.memory.spans[0])
    assert case.memory.content[offset:].startswith("here")
    assert length == len("here")  # the rest of the line, never a cut-off next line
    tally: collections.Counter[str] = collections.Counter()
    offline.tally_locator(tally, "x", case, 0)
    # the right turn, but its start lies in the preview: not reached, not shown whole
    assert tally == {"x: line is the evidence": 1, "x: shows it whole": 0, "x: reaches it": 0}
