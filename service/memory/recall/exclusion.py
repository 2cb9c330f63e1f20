"""``exclude_contents`` matching: which rows the caller already holds
(docs/tools.md, "Excluding what the caller holds").

Recall drops a row when its content matches an entry the caller sent back in
``exclude_contents`` (or, for ``recall_with_context``, an entry of its own conversation,
(docs/tools.md, "Merging with the conversation")). The match is deliberately loose so that a
truncated copy on either side still counts as "already held":

* both sides are normalised the same way: ``str.strip()`` (Unicode whitespace) and then
  ``str.lower()`` (full Unicode lower-casing, not ``casefold``);
* an empty normalised row is never excluded;
* an entry shorter than :data:`PREFIX_MATCH_MIN_CHARS` excludes only an exactly equal row,
  so a short phrase such as ``"filler memory number 1"`` cannot suppress every row that
  merely begins with it;
* a longer entry excludes a row when either one starts with the other. That is what makes
  the preview tier safe (docs/tools.md, "Preview tier"): a 500-character preview fed back still
  matches its stored row, and a short stored row that begins a long context entry is
  suppressed too.

Known quirk, inherited from ``str.lower``: a capital sigma (U+03A3) lower-cases to the
final form (U+03C2) when it ends a word, so a preview cut directly after one does not
prefix-match the lower-cased full text, which has the medial form (U+03C3) there. The
reference implementation behaves the same.

This is library logic (the library filters rows; the boundary only trims), so it lives in
``service.memory`` and is pure: no I/O and no imports from other service modules.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

PREFIX_MATCH_MIN_CHARS: Final = 32
"""Normalised entries at least this long also match by bidirectional starts-with."""


def normalise_exclusions(entries: Iterable[object]) -> frozenset[str]:
    """Normalise caller-supplied exclusion entries once, for :func:`excluded`.

    Non-string entries are skipped (fail-soft, like CPersona's lenient parameter extractor), and
    entries that normalise to ``""`` are dropped: they could only ever equal an empty row, and empty
    rows are never excluded.
    """
    normalised = (_normalise(entry) for entry in entries if isinstance(entry, str))
    return frozenset(entry for entry in normalised if entry)


def excluded(content: str, exclusions: Collection[str]) -> bool:
    """Whether a row with ``content`` is already held by the caller.

    ``exclusions`` must already be normalised, i.e. come from :func:`normalise_exclusions`;
    it is normalised once per request rather than once per candidate row. The 32-character
    floor is measured on the normalised entry.
    """
    text = _normalise(content)
    if not text:
        return False
    if text in exclusions:
        return True
    return any(_prefix_match(text, entry) for entry in exclusions)


def _normalise(text: str) -> str:
    """The one normalisation both sides go through: strip, then Unicode lower-case."""
    return text.strip().lower()


def _prefix_match(text: str, entry: str) -> bool:
    """Bidirectional starts-with, allowed only for entries long enough to be specific."""
    if len(entry) < PREFIX_MATCH_MIN_CHARS:
        return False
    return text.startswith(entry) or entry.startswith(text)
