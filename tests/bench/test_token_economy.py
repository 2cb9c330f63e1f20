"""Pure helpers of bench/token_economy.py: chunking, estimators, proxies, statistics."""

from __future__ import annotations

import math

import pytest

from bench import locomo_data as locomo, stats, token_economy as te


def turns(lengths: list[int], session: int = 1) -> list[locomo.Turn]:
    """Turns of the given content lengths, numbered D<session>:1.., one date."""
    return [
        locomo.Turn(f"D{session}:{n}", f"{n}" + "x" * (size - len(str(n))), "2023-05-08T13:56:00")
        for n, size in enumerate(lengths, start=1)
    ]


def test_target_length_is_deterministic_and_in_range() -> None:
    targets = [te.target_length(f"conv/D{n}/0") for n in range(500)]
    assert targets == [te.target_length(f"conv/D{n}/0") for n in range(500)]
    assert all(te.LONG_MIN <= t <= te.LONG_MAX for t in targets)
    assert max(targets) - min(targets) > 2_000  # the target really varies


def test_make_memory_spans_point_at_each_turn() -> None:
    parts = turns([40, 60, 25])
    memory = te.make_memory(parts, long=True)
    assert memory.msg_id == "D1:1..D1:3"
    assert memory.content == "\n".join(t.content for t in parts)
    for turn, span in zip(parts, memory.spans, strict=True):
        assert memory.content[span.start : span.end] == turn.content
    assert te.make_memory(parts[:1], long=False).msg_id == "D1:1"


def test_chunk_size_reaches_the_target_but_never_passes_the_cap() -> None:
    assert te.chunk_size(turns([400] * 10), 1_000) == 3  # 400 + 401 + 401 >= 1000
    assert te.chunk_size(turns([900] * 10), 4_000) == 4  # a fifth turn would pass 4,000
    assert te.chunk_size(turns([5_000]), 1_000) == 1  # a first turn is always taken


def test_chunk_session_alternates_and_keeps_every_turn_once() -> None:
    lengths = [150, 200, 120, 310, 90, 180, 250, 140, 60, 220] * 6
    parts = turns(lengths)
    memories = te.chunk_session(parts, "conv-x/D1")
    assert [s.dia_id for m in memories for s in m.spans] == [t.dia_id for t in parts]
    assert any(m.long for m in memories)
    assert any(not m.long for m in memories)
    for m in memories:
        if m.long:
            assert len(m.content) <= te.LONG_MAX
        else:
            assert len(m.spans) == 1
            assert len(m.content) < te.SHORT_MAX
    long_ones = [m for m in memories if m.long]
    assert all(len(m.content) >= te.LONG_MIN for m in long_ones[:-1])
    assert memories == te.chunk_session(parts, "conv-x/D1")  # deterministic


def test_a_long_turn_never_stands_alone_and_a_short_tail_is_split() -> None:
    memories = te.chunk_session(turns([3_990, 350, 3_990, 100, 80, 90]), "k")
    assert [m.long for m in memories] == [True, True, True, False, False, False]
    assert [len(m.spans) for m in memories] == [1] * 6  # 3,990 + any turn passes 4,000
    assert len(memories[1].content) == 350  # too long to stand as a short: an undersized chunk
    assert [m.msg_id for m in memories[4:]] == ["D1:5", "D1:6"]  # a tail < 1,000: singles


def test_build_corpus_never_crosses_sessions_and_strips_turns() -> None:
    conv = locomo.Conversation(
        "conv-t",
        (*turns([600, 700], session=1), locomo.Turn("D2:1", "  hello  ", "2023-06-01T10:00:00")),
        (),
    )
    memories = te.build_corpus(conv)
    assert {m.msg_id for m in memories} == {"D1:1..D1:2", "D2:1"}
    assert next(m for m in memories if m.msg_id == "D2:1").content == "hello"


def test_length_distribution_counts_kinds_and_buckets() -> None:
    memories = [te.make_memory(turns([100]), False), te.make_memory(turns([1_500]), True)]
    dist = te.length_distribution(memories)
    assert dist["count"] == 2
    assert dist["rows_over_preview"] == 1
    assert dist["short"]["count"] == 1
    assert dist["long"]["mean"] == 1_500
    assert dist["histogram"]["0-300"] == 1
    assert dist["histogram"]["1000-2000"] == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abc", 1),
        ("abcdefg", 2),  # 7 letters: two pieces of at most 6
        ("1234", 2),  # digits in threes
        ('{"a": 1}', 7),  # five marks { " " : } plus a plus 1
        ("Hey Mel! Good", 4),
    ],
)
def test_tokens_wordpiece(text: str, expected: int) -> None:
    assert te.tokens_wordpiece(text) == expected


def test_tokens_chars4_rounds_up() -> None:
    assert [te.tokens_chars4("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_measure_and_add_sizes() -> None:
    measures = {"chars": len, "utf8_bytes": lambda t: len(t.encode("utf-8"))}
    size = te.measure("héllo", measures)
    assert size == {"chars": 5, "utf8_bytes": 6}
    assert te.add_sizes(size, size) == {"chars": 10, "utf8_bytes": 12}


def test_estimators_include_the_basic_measures() -> None:
    found = te.estimators()
    assert {"chars", "utf8_bytes", "tokens_chars4", "tokens_wordpiece"} <= found.keys()
    if "tokens_minilm" in found:
        assert found["tokens_minilm"]("hello world") == 2


def test_position_of_a_span_against_the_visible_prefix() -> None:
    assert te.position(te.Span("a", 0, 500), 500) == "inside"
    assert te.position(te.Span("a", 499, 520), 500) == "straddles"
    assert te.position(te.Span("a", 500, 520), 500) == "beyond"


def test_answer_position_is_case_insensitive_and_reports_absence() -> None:
    text = "x" * 600 + "Paris"
    assert te.answer_position("Paris is nice", "paris", 500) == "inside"
    assert te.answer_position(text, "PARIS", 500) == "beyond"
    assert te.answer_position(text, "Rome", 500) == "not_verbatim"


def test_top_refs_are_the_last_ref_carrying_rows_best_first() -> None:
    rows = [{"ref": "mem:1"}, {"content": "[Profile]"}, {"ref": "mem:2"}, {"ref": "ep:3"}, {}]
    assert te.top_refs(rows) == ["ep:3", "mem:2"]
    assert te.top_refs(rows[:1]) == ["mem:1"]
    assert te.top_refs([]) == []


def test_saving_shed_and_describe() -> None:
    assert te.saving([40, 60], [100, 100]) == 0.5
    assert te.saving([1], [0]) is None
    assert te.shed(500, 2_000) == 0.75
    assert te.shed(10, 0) == 0.0
    described = stats.describe([1.0, 2.0, 3.0, 4.0])
    assert described["count"] == 4
    assert described["mean"] == 2.5
    assert described["max"] == 4.0
    assert stats.describe([]) == {"count": 0}


def test_lexical_pick_prefers_the_row_with_the_query_words() -> None:
    docs = [("a", "we talked about the weather"), ("b", "Caroline went to the support group")]
    assert te.lexical_pick("When did Caroline go to the support group?", docs, 1) == ["b"]
    assert te.lexical_pick("anything", [], 2) == []


def test_static_proxy_places_evidence_by_offset() -> None:
    first = te.make_memory(turns([600, 100]), long=True)  # D1:2 starts at 601: beyond
    short = te.make_memory(turns([50], session=2), long=False)
    placement = {"c": te.Placement.of([first, short])}
    questions = [
        locomo.Question("c", 0, 1, "q0", ("D1:2",)),
        locomo.Question("c", 1, 1, "q1", ("D2:1", "D1:1")),
    ]
    proxy = te.static_proxy(questions, placement, {("c", 0): "x" * 10, ("c", 1): "nowhere"})
    assert proxy["evidence_turns"] == {"beyond": 1, "inside": 1, "straddles": 1}
    assert proxy["questions"] == {"none_inside": 1, "any_inside": 1}
    assert proxy["short_answers"] == {"inside": 1, "not_verbatim": 1}


def test_row_sheds_compare_preview_and_full_rows_by_ref() -> None:
    full = {"ref": "mem:1", "content": "y" * 2_000, "id": "D1:1..D1:9"}
    preview = {**full, "content": "y" * 500, "content_truncated": True, "content_len": 2_000}
    ctx = te.Context({}, {}, {"chars": len, "tokens_chars4": te.tokens_chars4})
    sheds = te.row_sheds([preview, {"ref": "mem:2", "content": "z"}], [full], ctx)
    assert len(sheds) == 1
    assert sheds[0]["content_chars"] == 0.75
    assert 0.6 < sheds[0]["row_chars"] < 0.75  # the row's other fields and markers stay
    assert math.isclose(sheds[0]["content_len"], 2_000)
