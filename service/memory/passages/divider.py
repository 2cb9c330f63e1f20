"""The passage divider: a long text cut into window-sized passages at its structure.

The embedder reads one window of tokens (the local model 256) and truncates the rest, so
a text longer than a window is divided into passages that each fit one window and each
get a vector (docs/architecture.md, "Passages"). The divider is a pure function of the
text and of where the embedder's tokens end, so the same text always gives the same
passages (a rebuild after a re-embed changes nothing but the vectors).

Where a passage ends, best first: after a blank line, after a line break, after a
sentence end (``. ! ?`` followed by a space, or the full-width CJK ones), after a space; a position
inside a code fence or inside a matched pair of brackets only when the second half of
the window offers nothing else; at a token end as the last resort (a 16,000-character
word). The next passage starts a little before the cut (at most an eighth of the
passage, at the best boundary there), so a sentence on the cut is whole in one of
them.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Sequence

_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_PSEUDO_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w){{1,4}}|[^\w\s]")
_SENTENCE_END = ".!?"
_CJK_SENTENCE_END = "\u3002\uff01\uff1f"  # full-width full stop, ! and ?
_OPEN = {"(": ")", "[": "]", "{": "}"}

BEST_OUTSIDE = 9
"""Scores of a cut position: 9..6 a blank line, line break, sentence end or space
outside fences and brackets; 4..1 the same inside one; 0 any other token end."""


@dataclasses.dataclass(frozen=True, slots=True)
class Span:
    """One passage: characters ``start`` to ``end`` (exclusive) of the record's text."""

    start: int
    end: int


def pseudo_token_ends(text: str) -> list[int]:
    """Where the tokens of an estimated wordpiece tokenization end: one token per CJK
    character, per punctuation mark and per four word characters. The divider's token
    measure for an embedder that exposes no tokenizer (and for the divider's tests)."""
    return [match.end() for match in _PSEUDO_TOKEN.finditer(text)]


def divide(text: str, token_ends: Sequence[int], window: int) -> list[Span]:
    """The passages of ``text`` (none when its tokens fit one ``window``).

    ``token_ends[i]`` is the character offset where token ``i`` ends (increasing), as the
    embedder's tokenizer reads the text. Each passage holds at most ``window`` tokens;
    consecutive passages overlap a little; together they cover the text."""
    if window < 2:
        raise ValueError("window must be at least 2 tokens")
    if len(token_ends) <= window:
        return []
    scores = _cut_scores(text, token_ends)
    spans: list[Span] = []
    start, previous_cut = 0, 0
    while True:
        first = bisect.bisect_right(token_ends, start)
        if len(token_ends) - first <= window:
            spans.append(Span(start, len(text)))
            return spans
        limit = token_ends[first + window - 1]
        if limit <= previous_cut:  # the overlap left no room: start at the cut instead
            start = previous_cut
            continue
        cut = _best_cut(scores, max(start + (limit - start) // 2, previous_cut), limit)
        spans.append(Span(start, cut))
        start, previous_cut = _overlap_start(scores, start, cut), cut


def _best_cut(scores: Sequence[int], low: int, limit: int) -> int:
    """The best-scoring position in ``(low, limit]``, the last among equals; ``limit``
    (a token end) when there is none."""
    best, best_score = limit, -1
    for position in range(limit, low, -1):
        if scores[position] > best_score:
            best, best_score = position, scores[position]
            if best_score == BEST_OUTSIDE:
                break
    return best


def _overlap_start(scores: Sequence[int], start: int, cut: int) -> int:
    """Where the passage after ``cut`` starts: the best boundary (a space or better) in
    the last eighth of the passage, the earliest among equals; ``cut`` when none."""
    best, best_score = cut, 0
    for position in range(cut - (cut - start) // 8, cut):
        if position > start and scores[position] > best_score:
            best, best_score = position, scores[position]
    return best


def _cut_scores(text: str, token_ends: Sequence[int]) -> list[int]:
    """The score of ending a passage at each position ``0..len(text)`` (see BEST_OUTSIDE)."""
    inside = _protected(text)
    scores = [-1] * (len(text) + 1)
    for end in token_ends:
        scores[end] = 0
    scores[len(text)] = BEST_OUTSIDE
    for position in range(1, len(text)):
        boundary = _boundary(text, position)
        if boundary:
            scores[position] = boundary if inside[position] else boundary + 5
    return scores


def _boundary(text: str, position: int) -> int:
    """4 after a blank line, 3 after a line break, 2 after a sentence end, 1 after a
    space, 0 elsewhere."""
    before = text[position - 1]
    if before == "\n":
        return 4 if position >= 2 and text[position - 2] == "\n" else 3
    if before in _CJK_SENTENCE_END:
        return 2
    if before.isspace():
        return 2 if position >= 2 and text[position - 2] in _SENTENCE_END else 1
    if before in _SENTENCE_END and text[position].isspace():
        return 2
    return 0


def _protected(text: str) -> list[bool]:
    """Whether a cut at each position falls inside a code fence (```) or inside a matched
    pair of brackets outside fences (an unmatched bracket protects nothing)."""
    depth = [0] * (len(text) + 2)
    fence_open: int | None = None
    stack: list[tuple[str, int]] = []
    for match in re.finditer(r"```|[()\[\]{}]", text):
        mark, at = match.group(), match.start()
        if mark == "```":
            if fence_open is None:
                fence_open, stack = at, []
            else:
                _mark(depth, fence_open, match.end() - 1)
                fence_open = None
        elif fence_open is None:
            _bracket(depth, stack, mark, at)
    if fence_open is not None:
        _mark(depth, fence_open, len(text))
    inside, level = [False] * (len(text) + 1), 0
    for position in range(len(text) + 1):
        level += depth[position]
        inside[position] = level > 0
    return inside


def _bracket(depth: list[int], stack: list[tuple[str, int]], mark: str, at: int) -> None:
    if mark in _OPEN:
        stack.append((_OPEN[mark], at))
    elif stack and stack[-1][0] == mark:
        _mark(depth, stack.pop()[1], at)


def _mark(depth: list[int], first: int, last: int) -> None:
    """Protect the cut positions ``first + 1 .. last`` (inside the pair or fence)."""
    depth[first + 1] += 1
    depth[last + 1] -= 1
