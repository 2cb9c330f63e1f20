"""Dividing a stored text into blocks, ranking them, widening one to its governing range.

A *block* is a sentence-sized piece of a record: the text is cut at structure only — a
blank line, a line break, a sentence end — never inside a fenced code block or inside a
balanced bracket or quotation pair, and a piece longer than :data:`MAX_BLOCK_CHARS` is
force-split at a weak boundary (a comma, semicolon or colon, half- or full-width, or the
ideographic comma; then whitespace; never leaving less than half the allowance), else at
the limit. A block of whitespace only folds into the block after it (the last one into
the block before). The blocks partition the text: no gap, no
overlap, in order.

The service stores no blocks yet, so every long record is divided here, at read time
(``basis: "lexical"``; docs/tools.md, "reconstruct: quoting"). The rules are CPersona 2.6's
division rules, so a stored block set added later divides the same way.

Blocks are ranked by trigram overlap with the query: the number of distinct lower-cased
character trigrams a block shares with the query. When per-block closeness to a query
vector is supplied the two rankings are fused by reciprocal rank (k = 60): no block
vectors exist in this service yet, and :func:`rank_blocks` takes them as an optional
argument rather than inventing them. Equal values share a rank; ties go to the earlier
block (the written total order every quote relies on for determinism).

A block alone is a clause and can say the opposite of its record, so what is quoted is
its *governing range* (:func:`governing_range`): whole sentences, extended over a
neighbour that begins with a qualifier (however, but, unless, ただし, …), at most
:data:`GOVERNING_CHARS` characters.

Pure functions; positions are code points, spans half-open ``[start, end)``.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Sequence
from typing import Final

from service.memory import ranges

MAX_BLOCK_CHARS: Final = 739
"""The longest block: CPersona 2.6's limit (a block must embed in one piece)."""

GOVERNING_CHARS: Final = 2 * MAX_BLOCK_CHARS
"""The longest governing range; a rule wanting more reports ``complete=False``."""

RRF_K: Final = 60
"""Reciprocal-rank fusion constant for the trigram and vector rankings."""

Span = tuple[int, int]

_BOUNDARIES: Final = (
    re.compile(r"\n[ \t]*\n"),  # blank line
    re.compile(r"\n"),  # line break
    # full-width marks end a sentence anywhere; half-width ones only before whitespace
    # or the end, so a decimal point or a file extension is not a sentence end
    re.compile(r"[。\uff0e\uff01\uff1f]|[.!?](?=\s|$)"),
)
_WEAK: Final = (re.compile(r"[、\uff0c,;\uff1b:\uff1a]"), re.compile(r"\s"))
_FENCE: Final = re.compile(r"^[ \t]*```", re.MULTILINE)
_PAIRS: Final = {
    "「": "」",
    "『": "』",
    "\uff08": "\uff09",
    "(": ")",
    "\uff3b": "\uff3d",
    "[": "]",
    "【": "】",
    "《": "》",
    "〈": "〉",
}
_BRACKET: Final = re.compile("[" + re.escape("".join(_PAIRS) + "".join(_PAIRS.values())) + "]")
_TERMINATORS: Final = ("。", "\uff01", "\uff1f", "\uff0e", ".", "!", "?", "…")
QUALIFIERS: Final = (
    "ただし", "但し", "ただ、", "しかし", "しかしながら", "だが", "ですが", "でも、",
    "なお", "とはいえ", "一方", "他方", "その代わり", "代わりに", "except",
    "however", "but ", "although", "though", "unless", "instead", "on the other hand",
    "that said", "caveat", "note that", "provided that", "in fact", "actually",
)  # fmt: skip
"""Openers that make a sentence depend on its neighbour (ASCII ones case-insensitive)."""

_ASCII_QUALIFIERS: Final = tuple(q for q in QUALIFIERS if q.isascii())
_OTHER_QUALIFIERS: Final = tuple(q for q in QUALIFIERS if not q.isascii())
_QUALIFIER_SPAN: Final = max(len(q) for q in _ASCII_QUALIFIERS)
_QUALIFIER_READ: Final = max(len(q) for q in QUALIFIERS)


def revision(text: str) -> str:
    """The first 12 hex digits of SHA-256 over ``text``'s UTF-8 bytes: a span handed back
    later is refused when the record's text has changed since
    (docs/tools.md, "reconstruct: quoting")."""
    return ranges.revision(text)


def _fences(text: str) -> list[Span]:
    """Spans of fenced code blocks; an unclosed fence runs to the end of the text, and a
    span ends after its closing fence's line so the fence stays with its code."""
    marks = [m.start() for m in _FENCE.finditer(text)]
    spans: list[Span] = []
    for i in range(0, len(marks) - 1, 2):
        line_end = text.find("\n", marks[i + 1])
        spans.append((marks[i], len(text) if line_end == -1 else line_end + 1))
    if len(marks) % 2:
        spans.append((marks[-1], len(text)))
    return spans


def _bracketed(text: str) -> list[Span]:
    """Spans ``[open, close]`` of balanced bracket pairs. A closer matches the nearest
    pending opener of its kind; openers left above it, and any never closed, protect
    nothing (one stray 「 must not make the rest of a record one block). Linear: each
    closer kind keeps the stack positions of its pending openers."""
    pending: list[tuple[str, int]] = []
    by_closer: dict[str, list[int]] = {closer: [] for closer in _PAIRS.values()}
    pairs: list[Span] = []
    for found in _BRACKET.finditer(text):
        at, char = found.start(), found.group()
        if char in _PAIRS:
            by_closer[_PAIRS[char]].append(len(pending))
            pending.append((_PAIRS[char], at))
            continue
        waiting = by_closer[char]
        if not waiting:
            continue
        depth = waiting.pop()
        for closer, _ in pending[depth + 1 :]:
            by_closer[closer].pop()  # each is the top of its own closer's stack
        pairs.append((pending[depth][1], at))
        del pending[depth:]
    return pairs


def _structural_cuts(text: str) -> list[int]:
    """Offsets inside ``text`` where a block may end, sorted: structural boundaries not
    inside a fence or a bracket pair (a cut at ``c`` is inside ``[s, e)`` when
    ``s < c < e``, inside a pair ``[open, close]`` when ``open < c <= close``)."""
    inside = [0] * (len(text) + 2)
    for start, end in _fences(text):
        inside[start + 1] += 1
        inside[end] -= 1
    for opened, closed in _bracketed(text):
        inside[opened + 1] += 1
        inside[closed + 1] -= 1
    depth = list(itertools.accumulate(inside))
    cuts = {
        m.end()
        for pattern in _BOUNDARIES
        for m in pattern.finditer(text)
        if 0 < m.end() < len(text)
    }
    return sorted(cut for cut in cuts if depth[cut] <= 0)


def _weak_cut(text: str, start: int, limit: int) -> int | None:
    """The last weak boundary in ``(start, limit]`` leaving at least half the allowance."""
    floor = start + (limit - start) // 2
    for pattern in _WEAK:
        ends = [m.end() for m in pattern.finditer(text, start, limit) if m.end() > start]
        if ends and ends[-1] >= floor:
            return ends[-1]
    return None


def _force_split(text: str, start: int, end: int) -> list[Span]:
    spans: list[Span] = []
    while end - start > MAX_BLOCK_CHARS:
        cut = _weak_cut(text, start, start + MAX_BLOCK_CHARS) or start + MAX_BLOCK_CHARS
        spans.append((start, cut))
        start = cut
    spans.append((start, end))
    return spans


def _fold_blank(text: str, spans: list[Span]) -> list[Span]:
    """Each whitespace-only block joins the block after it (the last one the block before),
    unless the join would pass :data:`MAX_BLOCK_CHARS`."""
    out: list[Span] = []
    pending: Span | None = None
    for start, end in spans:
        if pending is not None:
            if end - pending[0] <= MAX_BLOCK_CHARS:
                start = pending[0]
            else:
                out.append(pending)
            pending = None
        if text[start:end].strip():
            out.append((start, end))
        else:
            pending = (start, end)
    if pending is not None:
        if out and pending[1] - out[-1][0] <= MAX_BLOCK_CHARS:
            out[-1] = (out[-1][0], pending[1])
        else:
            out.append(pending)
    return out


def blocks(text: str) -> list[Span]:
    """The blocks of ``text`` (see the module docstring); none for an empty text."""
    if not text:
        return []
    bounds = [0, *_structural_cuts(text), len(text)]
    spans: list[Span] = []
    for start, end in itertools.pairwise(bounds):
        spans.extend(
            _force_split(text, start, end) if end - start > MAX_BLOCK_CHARS else [(start, end)]
        )
    return _fold_blank(text, spans)


def trigrams(text: str) -> frozenset[str]:
    """Distinct lower-cased character trigrams (the whole text when shorter than three)."""
    folded = text.lower()
    if len(folded) < 3:
        return frozenset({folded} if folded else ())
    return frozenset(folded[i : i + 3] for i in range(len(folded) - 2))


def shared_trigrams(text: str, query_grams: frozenset[str]) -> int:
    """``len(query_grams & trigrams(text))``: by substring search when the query has fewer
    trigrams than the text has characters (the usual case), else by building the set."""
    if len(query_grams) < len(text):
        folded = text.lower()
        if len(folded) >= 3:
            return sum(1 for gram in query_grams if len(gram) == 3 and gram in folded)
    return len(query_grams & trigrams(text))


def shared_ranks(values: Sequence[float]) -> list[int]:
    """Rank by value, highest first, 0 best; equal values share a rank."""
    position = {value: rank for rank, value in enumerate(sorted(set(values), reverse=True))}
    return [position[value] for value in values]


def rank_blocks(
    text: str,
    spans: Sequence[Span],
    query_grams: frozenset[str],
    closeness: Sequence[float] | None = None,
) -> list[int]:
    """Block indices best first: trigram overlap with the query, fused by reciprocal rank
    (k = :data:`RRF_K`) with ``closeness`` (one value per block, higher nearer: a cosine
    to the query vector) when given; ties to the earlier block."""
    lexical = [float(shared_trigrams(text[s:e], query_grams)) for s, e in spans]
    rankings = [shared_ranks(lexical)]
    if closeness is not None:
        if len(closeness) != len(spans):
            raise ValueError("closeness needs one value per block")
        rankings.append(shared_ranks(closeness))
    fused = [sum(1.0 / (RRF_K + 1 + ranks[i]) for ranks in rankings) for i in range(len(spans))]
    return sorted(range(len(spans)), key=lambda i: (-fused[i], i))


def _starts_with_qualifier(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, leading whitespace skipped, begins with a qualifier.
    Reads only a qualifier's length of text, so widening a range stays linear."""
    while start < end and text[start].isspace():
        start += 1
    head = text[start : min(end, start + _QUALIFIER_READ)]
    return head.startswith(_OTHER_QUALIFIERS) or head[:_QUALIFIER_SPAN].lower().startswith(
        _ASCII_QUALIFIERS
    )


def _ends_a_sentence(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, trailing whitespace skipped, ends with a terminator."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end > start and text[end - 1] in _TERMINATORS


def _next_words(spans: Sequence[Span], text: str, after: int) -> Span:
    """From block ``after`` through the first non-blank block from there (a qualifier
    behind a blank block is still the next thing a reader meets)."""
    for k in range(after, len(spans)):
        if not text[spans[k][0] : spans[k][1]].isspace():
            return spans[after][0], spans[k][1]
    return spans[after][0], spans[-1][1]


@dataclasses.dataclass(frozen=True, slots=True)
class Division:
    """A text divided into blocks, with the reach of each block's governing range.

    Blocks form *sentences*: a run of blocks whose last one ends a sentence (its text,
    trailing whitespace aside, ends with a terminator). A sentence *joins* the one
    before it when it begins (leading whitespace and blank blocks aside) with a
    qualifier. ``chain_start[i]``/``chain_end[i]`` are the first and last block of the
    joined sentences holding block ``i``: the most its governing range may cover."""

    text: str
    spans: tuple[Span, ...]
    chain_start: tuple[int, ...]
    chain_end: tuple[int, ...]


def divide(text: str) -> Division:
    """The blocks of ``text`` and their chains (one pass over the blocks)."""
    spans = blocks(text)
    ends = [_ends_a_sentence(text, *span) for span in spans]
    joins = [
        j > 0 and _starts_with_qualifier(text, *_next_words(spans, text, j))
        for j in range(len(spans))
    ]
    starts: list[int] = []
    for j in range(len(spans)):
        starts.append(j if j == 0 or (ends[j - 1] and not joins[j]) else starts[-1])
    chain_end = [0] * len(spans)
    for j in range(len(spans) - 1, -1, -1):
        last = j == len(spans) - 1 or (ends[j] and not joins[j + 1])
        chain_end[j] = j if last else chain_end[j + 1]
    return Division(text, tuple(spans), tuple(starts), tuple(chain_end))


def governing_range(
    division: Division, index: int, limit: int = GOVERNING_CHARS
) -> tuple[int, int, bool]:
    """``(start, end, complete)``: block ``index`` widened in whole blocks to its chain —
    whole sentences, and the neighbouring sentence that a qualifier ties to it — backwards
    first (a qualification never comes without what it qualifies), then forwards, at
    most ``limit`` characters. ``complete`` is False when the limit stopped the widening
    (the range is then what fitted)."""
    spans = division.spans
    end = spans[index][1]
    reach = bisect.bisect_left(spans, end - limit, key=lambda span: span[0])
    first = max(division.chain_start[index], min(reach, index))
    start = spans[first][0]
    if first > division.chain_start[index]:
        return start, end, False
    fits = bisect.bisect_right(spans, start + limit, key=lambda span: span[1]) - 1
    last = min(division.chain_end[index], max(fits, index))
    return start, spans[last][1], last == division.chain_end[index]


def overlaps(taken: Sequence[Span], span: Span) -> bool:
    """Whether ``span`` overlaps one of ``taken`` (sorted, pairwise disjoint)."""
    before = bisect.bisect_left(taken, (span[1],))
    return before > 0 and taken[before - 1][1] > span[0]


def joined(ranges: Sequence[Span]) -> list[Span]:
    """Sorted disjoint ``ranges`` with every touching pair made one."""
    out: list[Span] = []
    for start, end in sorted(ranges):
        if out and start == out[-1][1]:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
