"""reconstruct's quotes: blocks, governing ranges, head quotes, excerpts, passages."""

from __future__ import annotations

import hashlib
import itertools

from hypothesis import given, settings, strategies as st

from service.mcp.shaping.reconstruct import divide, quote
from service.mcp.shaping.reconstruct.records import Record

PROPERTY = settings(database=None, deadline=None, max_examples=150)
FILLER = "We talked about the weather and what to have for lunch today. " * 6  # 372 chars
SEP = " \u2026 "


def long_record() -> tuple[str, str, str]:
    """A 1,709-character record whose matches lie past character 800, in two places."""
    first = "The greyhound Pixel won the derby at Wimbledon in May."
    second = "Pixel the greyhound retired after the derby season."
    text = "\n\n".join([FILLER, FILLER, FILLER, first, FILLER, second, ""])
    text += "z" * (1709 - len(text) - 1) + "."
    assert len(text) == 1709
    return text, first, second


def test_a_short_text_is_quoted_whole() -> None:
    found = quote.head_quote(Record("mem:1", "Short note."), "note", 800)
    assert (found.content, found.basis, found.ranges) == ("Short note.", "whole", ((0, 11),))
    assert found.content_len == 11
    assert not found.truncated
    assert found.expand is None


def test_acceptance_20_a_match_past_800_is_quoted_with_ranges_joined() -> None:
    text, first, second = long_record()
    found = quote.head_quote(Record("mem:1", text), "greyhound Pixel derby", 800)
    assert text.index(first) > 800
    assert first in found.content
    assert second in found.content
    assert found.basis == "lexical"
    assert found.content_len == 1709
    assert len(found.ranges) > 1
    assert found.content == SEP.join(text[s:e] for s, e in found.ranges)
    assert SEP in found.content
    assert len(found.content) <= 800


def test_ranges_are_shown_in_text_order_and_touching_ranges_merge() -> None:
    sentences = [f"Sentence number {n} says nothing much at all here. " for n in range(40)]
    sentences[30] = "Pixel greyhound derby. "
    sentences[31] = "Pixel greyhound derby again. "
    text = "".join(sentences)
    found = quote.head_quote(Record("mem:1", text), "Pixel greyhound derby", 120)
    starts = [s for s, _ in found.ranges]
    assert starts == sorted(starts)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(found.ranges))
    assert "Pixel greyhound derby. Pixel greyhound derby again." in found.content


def test_a_qualifier_extends_the_range_backwards_and_forwards() -> None:
    body = "Filler sentence without the words. " * 30
    text = body + "The deploy runs on Fridays. However, never before a holiday. " + body
    found = quote.head_quote(Record("mem:1", text), "deploy Fridays", 800)
    assert "The deploy runs on Fridays. However, never before a holiday." in found.content
    back = body + "We deploy on Fridays. Unless the deploy freeze is on. " + body
    found = quote.head_quote(Record("mem:1", back), "deploy freeze", 800)
    assert "We deploy on Fridays. Unless the deploy freeze is on." in found.content
    japanese = (
        "関係のない文です。" * 100
        + "リリースは金曜日です。ただし祝日の前は除きます。"
        + "関係のない文です。" * 100
    )
    found = quote.head_quote(Record("mem:1", japanese), "リリースは金曜日", 800)
    assert "リリースは金曜日です。ただし祝日の前は除きます。" in found.content


def test_an_oversized_best_range_is_cut_with_context_incomplete_and_expand() -> None:
    sentence = "greyhound " + ", ".join(f"clause {n}" for n in range(200)) + "."
    text = "Nothing here. " * 80 + sentence + " Nothing there." * 10
    record = Record("mem:7", text)
    found = quote.head_quote(record, "greyhound clause", 800)
    assert found.context_incomplete
    assert len(found.content) == 800
    assert found.expand is not None
    start, end = found.expand.span
    assert found.ranges == ((start, start + 800),)
    assert end - start > 800
    assert found.expand.ref == "mem:7"
    assert found.expand.revision == hashlib.sha256(text.encode()).hexdigest()[:12]


def test_a_single_block_record_is_quoted_from_its_start() -> None:
    text = "One sentence only " * 30  # 540 characters, no cut point: one block
    assert len(divide.blocks(text)) == 1
    found = quote.head_quote(Record("mem:1", text), "sentence", 100)
    assert found.basis == "start"
    assert found.content == text[:100]
    assert found.ranges == ((0, 100),)
    assert found.expand is not None
    assert found.expand.span == (0, len(text))
    assert not found.context_incomplete
    assert len(divide.blocks("a" * 900)) == 2  # a piece over 739 characters is force-split


def test_a_governing_range_is_whole_sentences_within_the_limit() -> None:
    text = (
        "First part, " + "still the same sentence, " * 10 + "end. Next one. But it qualifies. Done."
    )
    division = divide.divide(text)
    index = next(i for i, (s, e) in enumerate(division.spans) if "Next" in text[s:e])
    start, end, complete = divide.governing_range(division, index)
    assert text[start:end].strip() == "Next one. But it qualifies."
    assert complete
    lines = "x\n" * 1000
    division = divide.divide(lines)
    start, end, complete = divide.governing_range(division, 500)
    assert not complete
    assert end - start <= divide.GOVERNING_CHARS
    assert start < division.spans[500][0]


def test_revision_is_the_first_12_hex_of_sha256() -> None:
    assert divide.revision("é") == hashlib.sha256("é".encode()).hexdigest()[:12]


def test_an_episode_is_quoted_without_its_label() -> None:
    record = Record.shown("ep:1", "[Episode] Session on billing DB migration planning")
    found = quote.head_quote(record, "billing", 800)
    assert found.content == "Session on billing DB migration planning"
    assert found.ranges == ((0, 40),)
    assert Record.shown("mem:1", "[Episode] kept").text == "[Episode] kept"


def test_blocks_cut_at_structure_and_respect_brackets_and_fences() -> None:
    text = "One. Two!\nThree\n\nFour 「in. side」 five. v1.2 is out."
    spans = divide.blocks(text)
    pieces = [text[s:e] for s, e in spans]
    assert "".join(pieces) == text
    assert any("「in. side」" in piece for piece in pieces)
    assert not any(piece.endswith("v1.") for piece in pieces)
    fenced = "Intro.\n```\na.\nb.\n```\nOutro."
    assert any("```\na.\nb.\n```" in fenced[s:e] for s, e in divide.blocks(fenced))


def test_ranking_ties_go_to_the_earlier_block_and_closeness_fuses() -> None:
    text = "Alpha beta. Gamma delta. Alpha beta."
    spans = divide.blocks(text)
    grams = divide.trigrams("alpha beta")
    assert divide.rank_blocks(text, spans, grams)[0] == 0
    # a vector ranking that prefers the last block breaks the lexical tie toward it
    assert divide.rank_blocks(text, spans, grams, [0.1, 0.2, 0.9])[0] == 2


def test_an_excerpt_is_the_best_range_not_the_start() -> None:
    text, first, _ = long_record()
    found = quote.excerpt_quote(Record("mem:2", text), "greyhound Pixel derby Wimbledon", 500)
    assert first in found.content
    assert len(found.content) <= 500
    assert found.content_len == 1709
    ((start, end),) = found.ranges  # the matching paragraph, led by the blank line before it
    assert text[start:end].strip() == first
    short = quote.excerpt_quote(Record("mem:2", "tiny"), "x", 500)
    assert short.basis == "whole"


def test_an_excerpt_whose_range_was_stopped_by_the_limit_says_so() -> None:
    text = "x\n" * 1000 + "end."  # one sentence of 1,000 lines: longer than any range
    found = quote.excerpt_quote(Record("mem:2", text), "x", 1900)  # a large preview cap
    assert found.context_incomplete
    assert len(found.content) <= divide.GOVERNING_CHARS
    assert found.expand is not None
    ((start, end),) = found.ranges
    assert found.expand.span[0] <= start
    assert found.expand.span[1] > end


def test_passages_are_best_first_cut_to_800_and_never_overlap() -> None:
    text, first, _ = long_record()
    divided = quote.passages(Record("mem:1", text), "greyhound Pixel derby Wimbledon")
    assert divided.basis == "lexical"
    best = divided.passages[0]
    assert text[best.start : best.end].strip() == first
    spans = sorted((p.start, p.end) for p in divided.passages)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert all(p.end - p.start <= 800 for p in divided.passages)
    whole = quote.passages(Record("mem:1", "short"), "q")
    assert whole.basis == "whole"
    assert quote.passage_quote(whole, [0]).content == "short"
    shown = quote.passage_quote(divided, [1, 0])
    assert first in shown.content
    assert shown.ranges == tuple(sorted(shown.ranges))


TEXTS = st.lists(
    st.sampled_from(
        ["Pixel won.", "The derby.", "However, rain.", "ただし雨。", "\n", "\n\n", " ", "a" * 90,
         "greyhound racing is fast", "(nested. brackets)", "「引用。」", "x,y;z"]
    ),
    max_size=80,
).map("".join)  # fmt: skip


@PROPERTY
@given(text=TEXTS, cap=st.integers(1, 900), query=st.sampled_from(["Pixel derby", "雨", ""]))
def test_every_quote_is_its_ranges_of_the_stored_text_within_the_cap(
    text: str, cap: int, query: str
) -> None:
    spans = divide.blocks(text)
    assert [p for s in spans for p in s] == sorted(p for s in spans for p in s)
    if text:
        assert spans[0][0] == 0
        assert spans[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    for make in (quote.head_quote, quote.excerpt_quote):
        found = make(Record("mem:1", text), query, cap)
        assert found.content == SEP.join(text[s:e] for s, e in found.ranges)
        assert len(found.content) <= max(cap, 0) or found.basis == "whole"
        assert all(0 <= s <= e <= len(text) for s, e in found.ranges)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(found.ranges))
        assert make(Record("mem:1", text), query, cap) == found  # deterministic


def test_pathological_records_of_the_longest_length_divide_in_linear_time() -> None:
    """Records of 16,000 characters (the write cap) built to defeat the divider:
    thousands of unclosed openers, of closers matching nothing, of one-word sentences."""
    import time

    texts = [
        "(" * 8000 + "]" * 8000,
        "「" * 5000 + "x. " * 3000 + "」" * 2000,
        "a. " * 5333,
        "(a). " * 3200,
        "```\n" * 4000,
        "x\n" * 8000,  # one sentence of 8,000 lines: every block reaches the limit
    ]
    for text in texts:
        began = time.perf_counter()
        quote.head_quote(Record("mem:1", text), "a x", 800)
        quote.passages(Record("mem:1", text), "a x")
        assert time.perf_counter() - began < 2.0, text[:20]


@PROPERTY
@given(
    text=st.text(alphabet="abcAB İß. 雨", max_size=40),
    query=st.text(alphabet="abcAB İß. 雨", max_size=12),
)
def test_shared_trigrams_by_search_equal_the_set_intersection(text: str, query: str) -> None:
    grams = divide.trigrams(query)
    assert divide.shared_trigrams(text, grams) == len(grams & divide.trigrams(text))
