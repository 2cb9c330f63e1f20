"""Query-aware excerpts: where they come from, how they are cut, when there is none."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from service.mcp.shaping import excerpt, recall
from service.mcp.shaping.rows import RecallRow
from tests.mcp.shaping.rows import echo, mem, wire, wires

PROPERTY = settings(database=None, deadline=None, max_examples=150)
FILLER = "Ann: we talked about the weather and lunch again today.\n" * 12  # ~ 680 chars


def one(text: str, query: str, preview: int = 500) -> excerpt.Excerpt | None:
    (found,) = excerpt.excerpts([text], [True], query, preview)
    return found


def shows(text: str, query: str, needle: str) -> excerpt.Excerpt:
    """The excerpt of ``text`` for ``query``, which must contain ``needle``."""
    found = one(text, query)
    assert found is not None
    assert needle in found.text
    return found


def test_a_match_beyond_the_preview_gets_the_line_that_holds_it() -> None:
    line = "Bob: I adopted a greyhound called Pixel last spring."
    text = FILLER + line + "\n" + FILLER
    found = one(text, "When did Bob adopt the greyhound Pixel?")
    assert found is not None
    assert found.text.startswith(line)
    assert text[found.offset : found.offset + len(found.text)] == found.text
    assert found.offset == len(FILLER)


def test_the_line_is_shown_whole_and_the_excerpt_ends_where_it_ends() -> None:
    line = "Bob: I adopted a greyhound called Pixel last spring."
    text = FILLER + line + "\n" + FILLER
    found = shows(text, "greyhound Pixel", line)
    assert found.text == line  # no cut-off tail of the next line


def test_a_line_longer_than_the_window_but_within_unit_chars_is_shown_whole() -> None:
    line = "Bob: the greyhound Pixel " + "ran around the park and " * 12 + "slept."
    assert excerpt.EXCERPT_CHARS < len(line) <= excerpt.UNIT_CHARS
    found = shows(FILLER + line + "\n" + FILLER, "greyhound Pixel", line)
    assert found.text == line


def test_a_question_is_shown_with_the_answer_that_follows_it() -> None:
    asked = "Ann: Which greyhound did you adopt last spring?"
    answer = "Bob: Pixel, a grey one from the shelter."
    text = FILLER + asked + "\n" + answer + "\n" + FILLER
    found = shows(text, "Which greyhound did Bob adopt?", answer)
    assert found.text == asked + "\n" + answer


def test_a_question_whose_answer_does_not_fit_is_shown_alone() -> None:
    asked = "Ann: Which greyhound did you adopt last spring?"
    answer = "Bob: " + "a very long story " * 30
    text = FILLER + asked + "\n" + answer + "\n" + FILLER
    found = shows(text, "Which greyhound did Bob adopt?", asked)
    assert found.text == asked


def test_a_match_inside_the_preview_gets_no_excerpt() -> None:
    text = "Bob: the greyhound Pixel arrived.\n" + FILLER + "Bob: greyhound again.\n"
    assert one(text, "greyhound Pixel") is None


def test_a_line_the_preview_cuts_gets_an_excerpt_only_for_a_better_match_beyond_it() -> None:
    repeated = "Pixel is a greyhound " * 40  # one long line, the same match all along
    assert one(repeated, "Pixel") is None
    better = "Pixel naps. " * 10 + "x " * 200 + "Pixel won the greyhound derby. " + "y " * 100
    found = shows(better, "Pixel greyhound derby", "derby")
    assert found.offset >= 500 - len("x")  # continues the preview, never repeats it


def test_no_match_and_no_usable_term_get_no_excerpt() -> None:
    assert one(FILLER * 2, "zebra") is None
    assert one(FILLER * 2, "the of and") is None
    assert one(FILLER * 2, "") is None


def test_a_row_that_is_not_trimmed_gets_no_excerpt() -> None:
    (found,) = excerpt.excerpts(["short greyhound row"], [True], "greyhound", 500)
    assert found is None
    (flagged_off,) = excerpt.excerpts([FILLER + "greyhound"], [False], "greyhound", 500)
    assert flagged_off is None


def test_a_term_on_every_line_locates_less_than_a_rare_one() -> None:
    """'Ann' opens every line; 'quartet' appears once, far beyond the preview."""
    text = FILLER + "Ann: the string quartet played at noon.\n" + FILLER
    shows(text, "What did Ann hear the quartet play?", "quartet")


def test_terms_rarer_across_the_answer_weigh_more() -> None:
    common = "Bob: my dog likes the park.\n"
    rare = "Bob: my dog met a heron.\n"
    text = FILLER + common + FILLER + rare + FILLER
    others = ["dog park dog park", "the dog and the park"]
    found = excerpt.excerpts([*others, text], [False, False, True], "dog park heron", 500)[-1]
    assert found is not None
    assert found.text.startswith(rare.strip())


def test_a_long_line_is_cut_around_its_best_cluster_at_word_boundaries() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    text = FILLER + words.replace("word300", "kestrel nest") + "\n"
    found = shows(text, "kestrel nest", "kestrel nest")
    assert len(found.text) <= excerpt.EXCERPT_CHARS
    assert found.text.split()[0].startswith("word")
    assert found.text.split()[-1].startswith("word")
    assert text[found.offset - 1] == " "
    assert text[found.offset + len(found.text)] == " "


def test_cjk_text_is_matched_by_trigrams_and_cut_between_characters() -> None:
    text = "あいうえお" * 120 + "東京タワーに行きました。" + "かきくけこ" * 60
    found = shows(text, "東京タワー", "東京タワー")
    assert len(found.text) <= excerpt.EXCERPT_CHARS


def test_identifiers_are_matched_literally() -> None:
    text = FILLER + "Ops: patched CVE-2024-3094 on the build hosts.\n" + FILLER
    shows(text, "CVE-2024-3094", "CVE-2024-3094")


def test_shape_rows_adds_excerpt_and_offset_and_keeps_content_a_pure_prefix() -> None:
    line = "Bob: I adopted a greyhound called Pixel last spring."
    text = FILLER + line + "\n" + FILLER
    (shaped,), _ = recall.shape_rows(
        [mem(1, text)], preview_chars=500, full_content=False, query="greyhound Pixel"
    )
    assert shaped.shown == 500
    assert shaped.excerpt is not None
    row = wire(shaped)
    assert (row["excerpt_offset"], row["excerpt"]) == (shaped.excerpt.offset, shaped.excerpt.text)
    assert list(row)[-4:] == ["content_truncated", "content_len", "excerpt", "excerpt_offset"]
    assert row["content"] == text[:500]
    assert row["content_truncated"] is True
    assert row["content_len"] == len(text)
    offset, passage = row["excerpt_offset"], row["excerpt"]
    assert isinstance(offset, int)
    assert isinstance(passage, str)
    assert text[offset : offset + len(passage)] == passage


def test_full_content_rows_and_echoes_get_no_excerpt() -> None:
    text = FILLER + "Bob: greyhound Pixel.\n" + FILLER
    rows: list[RecallRow] = [mem(1, text), echo(text)]
    whole, _ = recall.shape_rows(rows, preview_chars=500, full_content=True, query="greyhound")
    previews, _ = recall.shape_rows(rows, preview_chars=500, full_content=False, query="greyhound")
    assert all("excerpt" not in row for row in wires(whole))
    assert all(row.excerpt is None for row in whole)
    turn = wire(previews[1])
    assert turn["content_truncated"] is True
    assert "excerpt" not in turn
    assert previews[1].excerpt is None


@PROPERTY
@given(
    words=st.lists(
        st.sampled_from(["fox", "owl", "elk", "yak?", "and", "x" * 30, "x" * 300]), max_size=400
    ),
    query=st.sampled_from(["fox", "owl elk", "yak fox owl", "zebra"]),
    newline=st.booleans(),
)
def test_an_excerpt_is_always_a_substring_of_at_most_unit_chars_beyond_the_preview(
    words: list[str], query: str, newline: bool
) -> None:
    text = ("\n" if newline else " ").join(words)
    found = one(text, query, preview=100)
    if found is None:
        return
    assert 0 < len(found.text) <= excerpt.UNIT_CHARS
    assert text[found.offset : found.offset + len(found.text)] == found.text
    assert found.text == found.text.strip()
    assert found.offset + len(found.text) > 100


def with_part(text: str, query: str, part: excerpt.Part) -> excerpt.Excerpt | None:
    (found,) = excerpt.excerpts([text], [True], query, 500, [part])
    return found


def test_a_row_found_by_meaning_alone_is_excerpted_where_its_passage_matched() -> None:
    line = "Bob: the little grey dog sleeps by the stove."
    text = FILLER + FILLER + line + "\n" + FILLER
    start = text.index(line)
    part = excerpt.Part(start - 60, start + 400, 0.62)
    assert one(text, "Where does the hound rest?") is None  # no word of it in the row
    found = with_part(text, "Where does the hound rest?", part)
    assert found is not None
    assert start - 60 <= found.offset < start + 400
    assert text[found.offset : found.offset + len(found.text)] == found.text


def test_the_passage_wins_when_its_meaning_plus_its_words_beat_the_lexical_pick() -> None:
    early = "Ann: the greyhound Pixel was adopted.\n"
    line = "Bob: Pixel finally arrived in May.\n"
    text = FILLER + early + FILLER + FILLER + line + FILLER
    query = "When did the greyhound Pixel come home?"
    lexical = one(text, query)
    assert lexical is not None
    assert lexical.offset == len(FILLER)  # the word-dense line wins by words alone
    start = text.index(line)
    found = with_part(text, query, excerpt.Part(start, start + len(line), 0.7))
    assert found is not None
    assert found.text.startswith(line.strip())


def test_a_weak_passage_leaves_the_lexical_pick() -> None:
    line = "Bob: I adopted a greyhound called Pixel last spring."
    text = FILLER + line + "\n" + FILLER + FILLER
    query = "When did Bob adopt the greyhound Pixel?"
    far = len(FILLER) * 2 + 20
    found = with_part(text, query, excerpt.Part(far, far + 300, 0.3))
    assert found is not None
    assert found.offset == len(FILLER)


def test_a_passage_inside_the_preview_adds_no_excerpt() -> None:
    text = "Bob: the stove is warm.\n" + FILLER
    assert with_part(text, "hound rest", excerpt.Part(0, 300, 0.9)) is None


def test_a_passage_the_preview_half_shows_needs_its_hidden_lines_to_beat_its_shown_ones() -> None:
    # the passage's cosine is the whole passage's: its lines in the preview share it
    shown = "Bob: I walked the greyhound Pixel in the park.\n"
    line = "Bob: we went out early."  # beyond the preview, in the same passage
    text = shown + FILLER + line + "\n" + FILLER
    query = "Where did Bob walk the greyhound Pixel?"
    start = text.index(line)
    assert start > 500
    assert one(text, query) is None  # the preview shows the best word match
    assert with_part(text, query, excerpt.Part(start, start + len(line), 0.9)) is not None
    assert with_part(text, query, excerpt.Part(0, start + len(line), 0.9)) is None
