"""Query-aware excerpts: the passage of a trimmed row that matches the query best.

A preview is the first ``P`` characters of a row, but in a chunk-shaped memory the part
that answers the query sits anywhere (measured: about two thirds of the evidence in long
rows lies entirely beyond a 500-character preview). A trimmed row whose best-matching
passage lies beyond its preview therefore also gets ``excerpt`` — at most
:data:`EXCERPT_CHARS` characters of the full text, cut at word boundaries — and
``excerpt_offset``, where it starts in the full text. ``content`` stays the pure prefix,
so ``exclude_contents`` matching and the seed's markers are untouched; a row whose best
match lies inside its preview gets no excerpt.

The passage is found in units: the lines of the text (its sentences when it is one line).
Each unit scores the query terms it contains, a term weighing more the fewer rows of the
answer contain it and the fewer times it occurs in this row (a speaker's name on every
line locates nothing). The best unit wins, the earliest on a tie, and the excerpt shows it
whole when it fits in :data:`UNIT_CHARS` — with the next unit too when the best one asks a
question (in a dialogue the answer follows the question, whose words a query often
repeats) and the pair fits — and ends there: a cut-off tail of the next line costs tokens
and shows no turn whole (measured: docs/benchmarks/passages.md, "Whole units"). In a unit
longer than that it covers the unit's strongest cluster of terms in :data:`EXCERPT_CHARS`.

Matches are lexical: the terms come from ``service.memory.recall.query_terms`` (the words
recall searches for, plus CJK trigrams and identifiers as literal substrings), and the
text's words go through the same ``word_lexeme`` rule, so whatever that rule learns (a
stemmer) excerpts learn with it. No line is embedded per call (seconds per answer,
docs/benchmarks/economy.md, "What the numbers mean"); the meaning comes from the stored
passages instead (docs/architecture.md, "Passages").

Passages: when recall's vector channel scored a passage of the row (its span and cosine,
:class:`Part`), the units fuse both signals. A unit's score is its lexical score divided
by the row's best unit's (0 to 1) plus the passage's cosine when the unit lies in the
passage. The cosine is the whole passage's, so where the preview shows the passage's first
lines they score it too, and a hidden line of the passage is shown only when it beats them
(before, the cosine carried the best hidden line past a better shown one of the same
passage: docs/benchmarks/passages.md, "Tokens, second round"). The best fused unit wins:
the passage is shown whenever its meaning plus its own words beat the lexical pick, and a
row found by meaning alone (no query word in it) is shown where it matched. Inside the
passage the excerpt starts at the unit with the most query words, else at its first unit.

Pure functions; positions and lengths are code points.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Final

from service.memory.recall import query_terms

EXCERPT_CHARS: Final = 240
"""The window an excerpt shows of a unit too long to show whole, and of a passage matched
by meaning alone: about one conversational turn (CPersona 2.6 spends 800)."""

UNIT_CHARS: Final = 400
"""The longest unit (or question and answer) an excerpt shows whole: the longest excerpt."""

_LINE: Final = re.compile(r"[^\n]+")
_STOPS: Final = ".!?\u3002\uff01\uff1f"  # and the ideographic full stop, ! and ?
_SENTENCE: Final = re.compile(rf"[^{_STOPS}\n]+(?:[{_STOPS}]+|$)")
_SENTENCE_END: Final = re.compile(rf"[{_STOPS}]+\s*")
_ASKS: Final = re.compile(r"[?\uff1f]\s*$")
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@dataclasses.dataclass(frozen=True, slots=True)
class QueryTerms:
    """What an excerpt looks for: lexemes (matched word by word) and literal substrings."""

    lexemes: frozenset[str]
    substrings: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.lexemes and not self.substrings


@dataclasses.dataclass(frozen=True, slots=True)
class Hit:
    """One occurrence of a query term in a text: ``[start, end)`` and the term."""

    start: int
    end: int
    term: str


@dataclasses.dataclass(frozen=True, slots=True)
class Excerpt:
    """A passage of a full text: ``text == full[offset:offset + len(text)]``."""

    offset: int
    text: str


def _unlike(pattern: str) -> str:
    """The literal text of a ``query_terms.like_pattern`` (``%text%`` with escapes)."""
    return re.sub(r"\\(.)", r"\1", pattern[1:-1])


def terms_of(query: str) -> QueryTerms:
    """The terms recall searches ``query`` for, in the form an excerpt matches them."""
    built = query_terms.build(query)
    return QueryTerms(frozenset(built.lexemes), tuple(_unlike(p) for p in built.patterns))


def find_hits(text: str, terms: QueryTerms) -> list[Hit]:
    """Every occurrence of a term in ``text``, ordered by position."""
    found = [
        Hit(start, end, lexeme)
        for lexeme, start, end in query_terms.lexeme_spans(text)
        if lexeme in terms.lexemes
    ]
    for literal in terms.substrings:
        pattern = re.compile(re.escape(literal), re.IGNORECASE)
        found.extend(Hit(m.start(), m.end(), literal.lower()) for m in pattern.finditer(text))
    found.sort(key=lambda hit: (hit.start, hit.end))
    return found


def term_weights(hits_by_row: Sequence[Sequence[Hit]]) -> dict[str, float]:
    """An inverse document frequency over the rows of one answer: ``ln(1 + N / df)``."""
    frequency: Counter[str] = Counter()
    for hits in hits_by_row:
        frequency.update({hit.term for hit in hits})
    rows = max(len(hits_by_row), 1)
    return {term: math.log1p(rows / count) for term, count in frequency.items()}


def units(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of the lines of ``text``; of its sentences when it has one line."""
    spans = [(m.start(), m.end()) for m in _LINE.finditer(text)]
    if len(spans) <= 1:
        spans = [(m.start(), m.end()) for m in _SENTENCE.finditer(text)]
    return spans or [(0, len(text))]


def _score(hits: Sequence[Hit], weights: Mapping[str, float], in_row: Counter[str]) -> float:
    """Distinct terms, each weighted by rarity across the answer and within the row."""
    return sum(weights.get(term, 1.0) / math.sqrt(in_row[term]) for term in {h.term for h in hits})


@dataclasses.dataclass(frozen=True, slots=True)
class ScoredUnit:
    """A unit of a text (``[start, end)``), the hits inside it and their score."""

    start: int
    end: int
    hits: list[Hit]
    score: float


def scored_units(text: str, hits: Sequence[Hit], weights: Mapping[str, float]) -> list[ScoredUnit]:
    """Every unit of ``text`` in order, scored by the query terms inside it (0: none)."""
    in_row = Counter(hit.term for hit in hits)
    scored = []
    for start, end in units(text):
        inside = [hit for hit in hits if start <= hit.start and hit.end <= end]
        score = _score(inside, weights, in_row) if inside else 0.0
        scored.append(ScoredUnit(start, end, inside, score))
    return scored


def best_unit(
    text: str, hits: Sequence[Hit], weights: Mapping[str, float]
) -> tuple[int, int, list[Hit]] | None:
    """The unit with the strongest match and its hits (the earliest on a tie); None: no hit."""
    best: ScoredUnit | None = None
    for unit in scored_units(text, hits, weights):
        if unit.hits and (best is None or unit.score > best.score + 1e-9):
            best = unit
    return None if best is None else (best.start, best.end, best.hits)


def best_cluster(
    hits: Sequence[Hit], weights: Mapping[str, float], width: int = EXCERPT_CHARS
) -> tuple[int, int]:
    """``(begin, end)`` of the strongest run of ``hits`` that fits in ``width`` characters
    (the earliest on a tie); a single hit when none fit together."""
    in_row = Counter(hit.term for hit in hits)
    best = (-1.0, hits[0].start, hits[0].end)
    last = 0
    for first, hit in enumerate(hits):
        last = max(last, first)
        while last + 1 < len(hits) and hits[last + 1].end - hit.start <= width:
            last += 1
        run = hits[first : last + 1]
        end = max(h.end for h in run)
        if end - hit.start > width:
            continue
        score = _score(run, weights, in_row)
        if score > best[0] + 1e-9:
            best = (score, hit.start, end)
    return best[1], best[2]


def _cuttable(text: str, at: int) -> bool:
    """Whether a cut at ``at`` keeps words whole (CJK characters are words of their own)."""
    if at <= 0 or at >= len(text):
        return True
    left, right = text[at - 1], text[at]
    inside_word = left.isalnum() and right.isalnum()
    return not inside_word or bool(_CJK.match(left) or _CJK.match(right))


def passage(text: str, start: int, width: int = EXCERPT_CHARS) -> Excerpt:
    """At most ``width`` characters of ``text`` from ``start``, ending at a word boundary
    (cut inside a word only when one word is longer than the window), stripped."""
    stop = min(len(text), start + width)
    while stop > start + 1 and not _cuttable(text, stop):
        stop -= 1
    if not _cuttable(text, stop):
        stop = min(len(text), start + width)
    piece = text[start:stop]
    stripped = piece.lstrip()
    return Excerpt(start + len(piece) - len(stripped), stripped.rstrip())


def around(
    text: str, begin: int, end: int, unit: tuple[int, int], width: int = EXCERPT_CHARS
) -> Excerpt:
    """A passage of at most ``width`` characters of the long ``unit`` covering
    ``[begin, end)``: from the latest sentence start that still reaches ``end``, else with
    the match in its middle, kept inside the unit and starting at a word boundary."""
    low, high = unit
    reach = max(low, end - width)
    starts = [low, *(m.end() for m in _SENTENCE_END.finditer(text, low, begin))]
    fitting = [at for at in starts if reach <= at <= begin]
    if fitting:
        return passage(text, fitting[-1], width)
    start = begin - max(0, width - (end - begin)) // 2
    start = max(low, min(start, high - width, begin))
    while start < begin and not _cuttable(text, start):
        start += 1
    return passage(text, start, width)


def whole_unit(text: str, unit: tuple[int, int], low: int) -> Excerpt | None:
    """``text[low:end]`` of ``unit`` when it fits in :data:`UNIT_CHARS`, running on through
    the next unit when ``unit`` asks a question and the pair fits; None: too long."""
    start, end = unit
    if end - low > UNIT_CHARS:
        return None
    if _ASKS.search(text, start, end):
        after = next(((s, e) for s, e in units(text) if s >= end), None)
        if after is not None and after[1] - low <= UNIT_CHARS:
            end = after[1]
    piece = text[low:end]
    stripped = piece.lstrip()
    return Excerpt(low + len(piece) - len(stripped), stripped.rstrip())


def excerpt(
    text: str,
    hits: Sequence[Hit],
    weights: Mapping[str, float],
    preview_chars: int,
    width: int = EXCERPT_CHARS,
) -> Excerpt | None:
    """The excerpt of a row trimmed to ``preview_chars``; None when its best match lies
    inside the preview or nothing matches. An excerpt never repeats the preview: in a unit
    the preview cuts, it continues from the word the preview cuts, and only when the unit's
    best cluster of terms lies beyond the preview."""
    found = best_unit(text, hits, weights)
    if found is None:
        return None
    start, end, inside = found
    begin, finish = best_cluster(inside, weights, width)
    if start < preview_chars and finish <= preview_chars:
        return None
    low = max(start, word_start(text, preview_chars))
    shown = whole_unit(text, (start, end), low)
    if shown is not None:
        return shown
    return around(text, max(begin, low), finish, (low, end), width)


@dataclasses.dataclass(frozen=True, slots=True)
class Part:
    """The passage of a text that matched the query best by meaning: ``[start, end)`` in
    the text (code points) and its cosine with the query."""

    start: int
    end: int
    cosine: float


def _inside(unit: ScoredUnit, low: int, high: int) -> bool:
    """Whether ``unit`` starts in ``[low, high)``."""
    return low <= unit.start < high


def passage_pick(
    text: str,
    hits: Sequence[Hit],
    weights: Mapping[str, float],
    preview_chars: int,
    part: Part,
    width: int = EXCERPT_CHARS,
) -> Excerpt | None:
    """The excerpt from ``part`` when its best unit's fused score beats every unit outside
    it (see the module's docstring), else None (the lexical pick stands). Only the part
    beyond the preview competes: what the preview shows needs no excerpt, and the part's
    units the preview shows score its cosine too (it is the whole passage's)."""
    low = max(part.start, word_start(text, preview_chars))
    if low >= part.end:
        return None
    scored = scored_units(text, hits, weights)
    top = max((unit.score for unit in scored), default=0.0)

    def lexical(unit: ScoredUnit) -> float:
        return unit.score / top if top > 0 else 0.0

    def rival(unit: ScoredUnit) -> float:  # a line of the passage the preview shows shares it
        return lexical(unit) + (part.cosine if _inside(unit, part.start, low) else 0.0)

    inside = [unit for unit in scored if _inside(unit, low, part.end)]
    outside = [rival(unit) for unit in scored if not _inside(unit, low, part.end)]
    best = max(inside, key=lambda unit: (lexical(unit), -unit.start), default=None)
    fused = part.cosine + (0.0 if best is None else lexical(best))
    if fused <= max(outside, default=0.0) + 1e-9:
        return None
    if best is None or not best.hits:
        return passage(text, low if best is None else best.start, width)
    shown = whole_unit(text, (best.start, best.end), best.start)
    if shown is not None:
        return shown
    begin, finish = best_cluster(best.hits, weights, width)
    return around(text, max(begin, low), finish, (best.start, best.end), width)


def word_start(text: str, at: int) -> int:
    """The start of the word that contains position ``at``."""
    while at > 0 and not _cuttable(text, at):
        at -= 1
    return at


def pick(
    text: str,
    hits: Sequence[Hit],
    weights: Mapping[str, float],
    preview_chars: int,
    part: Part | None,
) -> Excerpt | None:
    """The excerpt of one trimmed text: its passage's when that wins (:func:`passage_pick`),
    else the lexical one (:func:`excerpt`)."""
    if part is not None:
        chosen = passage_pick(text, hits, weights, preview_chars, part)
        if chosen is not None:
            return chosen
    return excerpt(text, hits, weights, preview_chars) if hits else None


def excerpts(
    texts: Sequence[str],
    wanted: Sequence[bool],
    query: str,
    preview_chars: int,
    parts: Sequence[Part | None] | None = None,
) -> list[Excerpt | None]:
    """The excerpt of every text flagged in ``wanted`` (trimmed rows with a ref), else None.

    ``texts`` are the full contents of all the rows of one answer: each counts in the term
    weights; ``parts`` their best passages by meaning (None: none scored). Texts not longer
    than ``preview_chars`` never get an excerpt.
    """
    terms = terms_of(query)
    found_parts = list(parts) if parts is not None else [None] * len(texts)
    if preview_chars <= 0 or (terms.empty and not any(found_parts)):
        return [None] * len(texts)
    hits = [find_hits(text, terms) if not terms.empty else [] for text in texts]
    weights = term_weights(hits)
    return [
        pick(text, found, weights, preview_chars, part)
        if want and len(text) > preview_chars
        else None
        for text, found, want, part in zip(texts, hits, wanted, found_parts, strict=True)
    ]
