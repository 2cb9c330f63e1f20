"""Unit tests for ``service.memory.exclusion``: ``exclude_contents`` matching
(docs/tools.md, "Excluding what the caller holds").

Numbers in test docstrings are the acceptance behaviours of the CPersona reference.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from service.memory.recall import exclusion

# No example database: property tests must not leave files in the checkout.
PROPERTY = settings(database=None, deadline=None, max_examples=200)


def held(content: str, *entries: object) -> bool:
    return exclusion.excluded(content, exclusion.normalise_exclusions(entries))


def test_a_500_char_preview_excludes_its_full_row() -> None:
    """39."""
    full = " ".join(f"Word{i}" for i in range(400))[:1479]
    assert held(full, full[:500])


def test_a_short_entry_does_not_exclude_a_row_it_merely_begins() -> None:
    """40, first half."""
    assert not held("filler memory number 1 about gardening and tomatoes", "filler memory number 1")


def test_a_short_entry_excludes_an_equal_row_after_strip_and_lower_case() -> None:
    """40, second half."""
    assert held("Filler Memory Number 1", "  filler memory NUMBER 1 ")


def test_a_short_row_that_begins_a_long_entry_is_excluded() -> None:
    """41: the reverse-prefix rule."""
    assert held("the", "the quick brown fox jumps over the lazy dog")


def test_prefix_matching_starts_at_exactly_32_normalised_chars() -> None:
    entry_31 = "a" * 31
    entry_32 = "a" * 32
    assert not held(entry_31 + " and more", entry_31)
    assert held(entry_32 + " and more", entry_32)
    assert not held("aaa", entry_31)
    assert held("aaa", entry_32)


def test_the_32_char_floor_is_measured_after_normalisation() -> None:
    padded = "   " + "b" * 30 + "   "
    assert len(padded) >= exclusion.PREFIX_MATCH_MIN_CHARS
    assert not held("b" * 30 + " tail", padded)
    assert held("b" * 30, padded)


@pytest.mark.parametrize("content", ["", "   ", "\u3000\t\n"])
def test_an_empty_row_is_never_excluded(content: str) -> None:
    assert not held(content, "x" * 40, "   ", "")


def test_a_long_entry_does_not_exclude_an_unrelated_row() -> None:
    entry = "the quick brown fox jumps over the lazy dog"
    assert not held("a quick brown fox jumps over the lazy dog", entry)
    assert not held("the quick brown fox jumps over the lazy cat!", entry)


def test_no_exclusions_exclude_nothing() -> None:
    assert not held("anything at all")


def test_normalisation_is_unicode_aware() -> None:
    assert held("\u2003École Normale\u3000", "école normale")
    assert held("ΣΟΦΊΑ", "σοφία")


def test_normalise_exclusions_drops_empty_and_non_string_entries() -> None:
    entries: list[object] = ["  Keep Me ", "", "   ", None, 42, ["x"], "keep me"]
    assert exclusion.normalise_exclusions(entries) == frozenset({"keep me"})


def test_an_entry_that_is_only_a_truncated_context_copy_still_matches() -> None:
    """A caller's context entry may be the longer side: the row is a prefix of it."""
    stored = "Deploy checklist: run migrations first"
    context = stored + " and then restart every worker in the pool."
    assert held(stored, context)


# Capital sigma is left out: see the final-sigma quirk in the module docstring.
_NO_SIGMA = "\u03a3"
_SPECIFIC = st.characters(categories=["L", "N", "P"], exclude_characters=_NO_SIGMA)
_ANY = st.characters(exclude_characters=_NO_SIGMA)


@PROPERTY
@given(
    head=st.text(alphabet=_SPECIFIC, min_size=32, max_size=60),
    tail=st.text(alphabet=_ANY, max_size=60),
    cut=st.integers(min_value=32, max_value=120),
)
def test_any_prefix_of_at_least_32_chars_excludes_its_row(head: str, tail: str, cut: int) -> None:
    """The preview contract: a pure prefix fed back suppresses the stored row."""
    content = head + tail
    assert held(content, content[:cut])


@PROPERTY
@given(content=st.text(max_size=80))
def test_a_row_is_excluded_by_itself_unless_it_is_blank(content: str) -> None:
    assert held(content, content) is bool(content.strip())
