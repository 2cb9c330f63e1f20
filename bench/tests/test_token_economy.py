"""Pure parts of the token-economy benchmark: chunking, estimators, proxies, tallies."""

from __future__ import annotations

import math

import pytest

from bench.corpora import locomo
from bench.economy import corpus, estimates as est, judges as proxy, probe, tally
from bench.harness import client, stats


def turns(lengths: list[int], session: int = 1) -> list[locomo.Turn]:
    """Turns of the given content lengths, numbered D<session>:1.., one date."""
    return [
        locomo.Turn(f"D{session}:{n}", f"{n}" + "x" * (size - len(str(n))), "2023-05-08T13:56:00")
        for n, size in enumerate(lengths, start=1)
    ]


def test_target_length_is_deterministic_and_in_range() -> None:
    targets = [corpus.target_length(f"conv/D{n}/0") for n in range(500)]
    assert targets == [corpus.target_length(f"conv/D{n}/0") for n in range(500)]
    assert all(corpus.LONG_MIN <= t <= corpus.LONG_MAX for t in targets)
    assert max(targets) - min(targets) > 2_000  # the target really varies


def test_make_memory_spans_point_at_each_turn() -> None:
    parts = turns([40, 60, 25])
    memory = corpus.make_memory(parts, long=True)
    assert memory.msg_id == "D1:1..D1:3"
    assert memory.content == "\n".join(t.content for t in parts)
    for turn, span in zip(parts, memory.spans, strict=True):
        assert memory.content[span.start : span.end] == turn.content
    assert corpus.make_memory(parts[:1], long=False).msg_id == "D1:1"


def test_chunk_size_reaches_the_target_but_never_passes_the_cap() -> None:
    assert corpus.chunk_size(turns([400] * 10), 1_000) == 3  # 400 + 401 + 401 >= 1000
    assert corpus.chunk_size(turns([900] * 10), 4_000) == 4  # a fifth turn would pass 4,000
    assert corpus.chunk_size(turns([5_000]), 1_000) == 1  # a first turn is always taken


def test_chunk_session_alternates_and_keeps_every_turn_once() -> None:
    lengths = [150, 200, 120, 310, 90, 180, 250, 140, 60, 220] * 6
    parts = turns(lengths)
    memories = corpus.chunk_session(parts, "conv-x/D1")
    assert [s.dia_id for m in memories for s in m.spans] == [t.dia_id for t in parts]
    assert any(m.long for m in memories)
    assert any(not m.long for m in memories)
    for m in memories:
        if m.long:
            assert len(m.content) <= corpus.LONG_MAX
        else:
            assert len(m.spans) == 1
            assert len(m.content) < corpus.SHORT_MAX
    long_ones = [m for m in memories if m.long]
    assert all(len(m.content) >= corpus.LONG_MIN for m in long_ones[:-1])
    assert memories == corpus.chunk_session(parts, "conv-x/D1")  # deterministic


def test_a_long_turn_never_stands_alone_and_a_short_tail_is_split() -> None:
    memories = corpus.chunk_session(turns([3_990, 350, 3_990, 100, 80, 90]), "k")
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
    memories = corpus.build_corpus(conv)
    assert {m.msg_id for m in memories} == {"D1:1..D1:2", "D2:1"}
    assert next(m for m in memories if m.msg_id == "D2:1").content == "hello"


def test_length_distribution_counts_kinds_and_buckets() -> None:
    memories = [corpus.make_memory(turns([100]), False), corpus.make_memory(turns([1_500]), True)]
    dist = corpus.length_distribution(memories)
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
    assert est.tokens_wordpiece(text) == expected


def test_tokens_chars4_rounds_up() -> None:
    assert [est.tokens_chars4("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_measure_and_add_sizes() -> None:
    measures = {"chars": len, "utf8_bytes": lambda t: len(t.encode("utf-8"))}
    size = est.measure("héllo", measures)
    assert size == {"chars": 5, "utf8_bytes": 6}
    assert est.add_sizes(size, size) == {"chars": 10, "utf8_bytes": 12}


def test_estimators_include_the_basic_measures() -> None:
    found = est.estimators()
    assert {"chars", "utf8_bytes", "tokens_chars4", "tokens_wordpiece"} <= found.keys()
    if "tokens_minilm" in found:
        assert found["tokens_minilm"]("hello world") == 2


def test_position_of_a_span_against_the_visible_prefix() -> None:
    assert proxy.position(corpus.Span("a", 0, 500), 500) == "inside"
    assert proxy.position(corpus.Span("a", 499, 520), 500) == "straddles"
    assert proxy.position(corpus.Span("a", 500, 520), 500) == "beyond"


def test_answer_position_is_case_insensitive_and_reports_absence() -> None:
    text = "x" * 600 + "Paris"
    assert proxy.answer_position("Paris is nice", "paris", 500) == "inside"
    assert proxy.answer_position(text, "PARIS", 500) == "beyond"
    assert proxy.answer_position(text, "Rome", 500) == "not_verbatim"


def test_top_refs_are_the_last_ref_carrying_rows_best_first() -> None:
    rows = [{"ref": "mem:1"}, {"content": "[Profile]"}, {"ref": "mem:2"}, {"ref": "ep:3"}, {}]
    assert probe.top_refs(rows) == ["ep:3", "mem:2"]
    assert probe.top_refs(rows[:1]) == ["mem:1"]
    assert probe.top_refs([]) == []


def test_saving_shed_and_describe() -> None:
    assert est.saving([40, 60], [100, 100]) == 0.5
    assert est.saving([1], [0]) is None
    assert est.shed(500, 2_000) == 0.75
    assert est.shed(10, 0) == 0.0
    described = stats.describe([1.0, 2.0, 3.0, 4.0])
    assert described["count"] == 4
    assert described["mean"] == 2.5
    assert described["max"] == 4.0
    assert stats.describe([]) == {"count": 0}


def test_lexical_pick_prefers_the_row_with_the_query_words() -> None:
    docs = [("a", "we talked about the weather"), ("b", "Caroline went to the support group")]
    assert proxy.lexical_pick("When did Caroline go to the support group?", docs, 1) == ["b"]
    assert proxy.lexical_pick("anything", [], 2) == []


def test_static_proxy_places_evidence_by_offset() -> None:
    first = corpus.make_memory(turns([600, 100]), long=True)  # D1:2 starts at 601: beyond
    short = corpus.make_memory(turns([50], session=2), long=False)
    placement = {"c": corpus.Placement.of([first, short])}
    questions = [
        locomo.Question("c", 0, 1, "q0", ("D1:2",)),
        locomo.Question("c", 1, 1, "q1", ("D2:1", "D1:1")),
    ]
    found = proxy.static_proxy(questions, placement, {("c", 0): "x" * 10, ("c", 1): "nowhere"})
    assert found["evidence_turns"] == {"beyond": 1, "inside": 1, "straddles": 1}
    assert found["questions"] == {"none_inside": 1, "any_inside": 1}
    assert found["short_answers"] == {"inside": 1, "not_verbatim": 1}


def test_row_sheds_compare_preview_and_full_rows_by_ref() -> None:
    full = {"ref": "mem:1", "content": "y" * 2_000, "id": "D1:1..D1:9"}
    preview = {**full, "content": "y" * 500, "content_truncated": True, "content_len": 2_000}
    ctx = tally.Context({}, {}, {"chars": len, "tokens_chars4": est.tokens_chars4})
    sheds = tally.row_sheds([preview, {"ref": "mem:2", "content": "z"}], [full], ctx)
    assert len(sheds) == 1
    assert sheds[0]["content_chars"] == 0.75
    assert 0.6 < sheds[0]["row_chars"] < 0.75  # the row's other fields and markers stay
    assert math.isclose(sheds[0]["content_len"], 2_000)


def _tally_with(previews: list[int], full: list[int], long: list[bool]) -> tally.Tally:
    t = tally.Tally()
    for p, f, is_long in zip(previews, full, long, strict=True):
        for name in tally.COMPARED:
            t.sizes[name].append({"chars": p})
        t.sizes["get_contents"].append({"chars": 0})
        t.sizes["full_content"].append({"chars": f})
        t.has_long.append(is_long)
    return t


def test_savings_over_all_queries_and_a_subset() -> None:
    t = _tally_with([50, 100], [200, 100], [True, False])
    assert tally.savings(t, [True, True])["chars"] == {
        "queries": 2,
        "previews_vs_full": 0.5,
        "previews+get_contents_vs_full": 0.5,
        "previews+get_contents_trimmed_vs_full": 0.5,
    }
    assert tally.savings(t, t.has_long)["chars"]["previews_vs_full"] == 0.75
    summary = tally.summarise(t)
    assert summary["queries"] == 2
    assert summary["queries_with_long_row"] == 1
    assert summary["sizes"]["full_content"]["chars"]["max"] == 200


def test_summarise_rows_counts_the_share_meeting_the_claim() -> None:
    sheds = [
        {"content_len": 2_000.0, "content_chars": 0.75},
        {"content_len": 900.0, "content_chars": 0.44},
    ]
    rows = tally.summarise_rows(sheds)
    assert rows["trimmed_rows"] == 2
    assert rows["content_chars"]["share_meeting_60pct"] == 0.5
    assert "content_len" not in rows
    assert tally.summarise_rows([]) == {"trimmed_rows": 0}


def test_record_and_integrity_checks() -> None:
    stored = corpus.make_memory(turns([600]), long=True)
    ctx = tally.Context({"c": {stored.msg_id: stored}}, {}, {"chars": len})
    t = tally.Tally()
    rows: list[dict[str, object]] = [{"ref": "mem:1", "content_truncated": True}, {"ref": "mem:2"}]
    tally.record(t, {"previews": {"chars": 10}}, rows, ["mem:2"])
    assert t.has_long == [True]
    assert (t.counts["rows"], t.counts["fetched_rows"]) == (2, 1)
    assert t.counts["fetched_rows_not_truncated"] == 1
    full = [{"id": stored.msg_id, "content": stored.content}, {"id": "D9:9", "content": "x"}]
    tally.check_integrity("c", full, ctx, t)
    assert t.counts["full_rows"] == 2
    assert t.counts["full_rows_not_matching_corpus"] == 1
    assert t.counts["full_rows_json_chars_besides_content"] > 0


def test_messages_keeps_row_objects_only() -> None:
    reply = client.Reply("", {"messages": [{"id": "a"}, "x", 3]}, 0.0, False)
    assert probe.messages(reply) == [{"id": "a"}]
    assert probe.messages(client.Reply("", {"error": "x"}, 0.0, True)) == []


def test_in_response_proxy_and_lexical_judge() -> None:
    first = corpus.make_memory(turns([600, 100]), long=True)  # D1:2 starts at 601
    ctx = tally.Context({"c": {first.msg_id: first}}, {"c": corpus.Placement.of([first])}, {})
    t = tally.Tally()
    q = locomo.Question("c", 0, 1, "x" * 5, ("D1:2",))
    preview = [{"id": first.msg_id, "ref": "mem:1", "content": first.content[:500]}]
    proxy.evidence_in_response(q, preview, ctx, t)
    assert t.evidence == {"long:beyond": 1}
    assert t.questions == {"none_inside": 1}
    proxy.evidence_in_response(q, [], ctx, t)
    assert t.questions["evidence_row_not_returned"] == 1
    proxy.judge(q, preview, ctx, t)
    assert t.judge["eligible"] == 1
    assert t.judge["service_top1"] == 1  # the only row is the evidence row
