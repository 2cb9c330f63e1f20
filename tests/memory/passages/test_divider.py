"""The passage divider (docs/architecture.md, "Passages"): window-sized, cut at structure,
never inside a code fence or brackets when there is another place, a little overlap,
deterministic. Pure functions: no database."""

from __future__ import annotations

import itertools
import random

import pytest

from service.memory.passages.divider import Span, divide, pseudo_token_ends

WINDOW = 64


def spans_of(text: str, window: int = WINDOW) -> list[Span]:
    return divide(text, pseudo_token_ends(text), window)


def tokens_in(text: str, span: Span) -> int:
    return len(pseudo_token_ends(text[span.start : span.end]))


def assert_covers(text: str, spans: list[Span], window: int = WINDOW) -> None:
    """Every character is in a passage, passages go forward, each fits the window."""
    assert spans[0].start == 0
    assert spans[-1].end == len(text)
    for before, after in itertools.pairwise(spans):
        assert before.start < after.start <= before.end < after.end
    for span in spans:
        assert tokens_in(text, span) <= window


def sentence(rng: random.Random) -> str:
    words = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 8)))
        for _ in range(rng.randint(5, 14))
    ]
    return " ".join(words).capitalize() + "."


def prose(rng: random.Random, paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(sentence(rng) for _ in range(rng.randint(2, 5))) for _ in range(paragraphs)
    )


def test_a_text_within_one_window_has_no_passages() -> None:
    text = "A short note. " * 4
    assert len(pseudo_token_ends(text)) <= WINDOW
    assert spans_of(text) == []


def test_prose_is_cut_at_paragraphs_and_sentences_with_a_little_overlap() -> None:
    text = prose(random.Random(7), 30)
    spans = spans_of(text)
    assert len(spans) > 5
    assert_covers(text, spans)
    for span in spans[:-1]:
        before = text[: span.end]
        assert before.endswith(("\n\n", ". ", ".")), repr(before[-20:])
    overlaps = [b.end - a.start for b, a in itertools.pairwise(spans)]
    assert any(overlap > 0 for overlap in overlaps)
    for span, overlap in zip(spans, overlaps, strict=False):
        assert overlap <= (span.end - span.start) // 4


def test_the_same_text_gives_the_same_passages() -> None:
    text = prose(random.Random(3), 20)
    assert spans_of(text) == spans_of(str(text))


def test_a_16000_character_unbroken_word_is_cut_to_the_window() -> None:
    text = "x" * 16_000
    spans = spans_of(text)
    assert_covers(text, spans)
    assert all(tokens_in(text, span) >= WINDOW // 2 for span in spans[:-1])


def test_only_code_is_cut_at_line_breaks() -> None:
    lines = [f"    value_{i} = compute(value_{i - 1}, {i})  # step {i}" for i in range(1, 400)]
    text = "```python\ndef run():\n" + "\n".join(lines) + "\n```\n"
    spans = spans_of(text)
    assert_covers(text, spans)
    for span in spans[:-1]:
        assert text[span.end - 1] == "\n"


def test_a_code_fence_or_brackets_are_not_cut_when_there_is_another_place() -> None:
    rng = random.Random(11)
    code = "```\n" + "\n".join(f"x{i} = {i}" for i in range(4)) + "\n```"
    bracket = "(see the note. On page 12,\nand the one after it)"
    parts = []
    for i in range(40):
        parts.append(sentence(rng) + " " + sentence(rng))
        parts.append(code if i % 2 else bracket)
    text = "\n".join(parts)
    spans = spans_of(text)
    assert_covers(text, spans)
    fences = [(m, text.index("```", m + 3) + 3) for m in _all(text, "```\nx0")]
    brackets = [(m, text.index(")", m)) for m in _all(text, "(")]
    for span in spans[:-1]:
        for start, end in fences + brackets:
            assert not start < span.end < end, (span, start, end)


def _all(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def test_cjk_without_spaces_is_cut_at_sentence_ends() -> None:
    text = "".join("今日は天気が良いので公園に散歩に行きました" + "。" for _ in range(60))
    spans = spans_of(text)
    assert_covers(text, spans)
    for span in spans[:-1]:
        assert text[span.end - 1] == "。"


def test_cjk_without_any_break_is_still_cut_to_the_window() -> None:
    text = "漢字" * 3000
    spans = spans_of(text)
    assert_covers(text, spans)


@pytest.mark.parametrize("seed", range(5))
def test_random_texts_are_always_covered(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = "ab c.\n\n()[]{}```。字 "
    text = "".join(rng.choice(alphabet) for _ in range(6000))
    spans = spans_of(text)
    if spans:
        assert_covers(text, spans)
