"""Turn a recall query into full-text terms (docs/tools.md, "Retrievers", adapted to Postgres).

CPersona splits the query into runs of CJK characters and runs of other
non-whitespace characters: CJK runs of three or more become overlapping
3-grams, other runs of three or more are kept whole, shorter ones dropped.
Here the whole runs become lexemes of a ``tsquery`` OR-query over the
language-neutral ``simple`` configuration (common English function words are
left out of the query, not the index, so the index stays language-neutral),
and CJK 3-grams plus runs with inner punctuation (identifiers such as
``CVE-2024-3094``) become case-insensitive substring patterns served by the
trigram index. An apostrophe alone does not make an identifier: possessives and
contractions (``Caroline's``, ``can't``) are words, so they never cost a trigram
scan that matches half the agent. The recall statement derives the stemmed
(English Snowball) terms from the same words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence

from service.config.recall import MAX_QUERY_PATTERNS, MAX_QUERY_TERMS

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_RUNS = re.compile(rf"[{_CJK}]+|[^\s{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
_WORD = re.compile(r"\w+")
_IDENTIFIER_PUNCT = re.compile(r"[^\w\s'\u2019]")
_MIN_RUN = 3
MAX_TERMS = MAX_QUERY_TERMS
MAX_PATTERNS = MAX_QUERY_PATTERNS
MAX_LEXEME_BYTES = 2046
"""Postgres drops longer words when it builds a tsvector (and refuses them in a tsquery),
so such a word can never match and is left out of the query."""
STOPWORDS = frozenset(
    {
        "a",
        "about",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yes",
    }
)


@dataclasses.dataclass(frozen=True, slots=True)
class Terms:
    """``tsquery`` text (None when no usable word) and substring LIKE patterns."""

    tsquery: str | None
    patterns: tuple[str, ...]
    lexemes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.tsquery is None and not self.patterns


def like_pattern(text: str) -> str:
    """``%text%`` with LIKE's metacharacters escaped (default escape ``\\``)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def phrase_patterns(phrases: Sequence[str], taken: Sequence[str] = ()) -> tuple[str, ...]:
    """Substring patterns of whole phrases (reconstruct's extra lexical terms): each
    trimmed phrase of at least three characters (the trigram index serves no shorter
    one), once, leaving out patterns already in ``taken``."""
    seen = set(taken)
    out: list[str] = []
    for phrase in phrases:
        text = phrase.strip()
        pattern = like_pattern(text)
        if len(text) >= _MIN_RUN and pattern not in seen:
            seen.add(pattern)
            out.append(pattern)
    return tuple(out)


def _trigrams(run: str) -> list[str]:
    return [run[i : i + 3] for i in range(len(run) - 2)]


def word_lexeme(word: str) -> str | None:
    """The lexeme one word becomes (lower-cased), or None for a stop word, a single letter
    or a word too long to be a lexeme.

    The one rule that turns a word into a search term, for queries and for locating
    matches in stored text (the MCP boundary's excerpts): a stemmer belongs here.
    """
    lexeme = word.lower()
    if len(lexeme) < 2 or lexeme in STOPWORDS or len(lexeme.encode()) > MAX_LEXEME_BYTES:
        return None  # a word too long for a tsquery can never match
    return lexeme


def lexeme_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """``(lexeme, start, end)`` of every word of ``text`` that is a search term, in order."""
    for match in _WORD.finditer(text):
        lexeme = word_lexeme(match.group())
        if lexeme is not None:
            yield lexeme, match.start(), match.end()


def _lexemes(run: str) -> list[str]:
    return [lexeme for lexeme, _, _ in lexeme_spans(run)]


def longest(items: list[str], bound: int) -> list[str]:
    """The ``bound`` longest of distinct ``items`` (ties: the earlier first), in their order.

    Length is the informativeness proxy that needs no lookup: short words are the common
    ones, and a longer substring has more trigrams, so the index narrows it further.
    """
    if len(items) <= bound:
        return items
    kept = set(sorted(range(len(items)), key=lambda n: (-len(items[n]), n))[:bound])
    return [item for n, item in enumerate(items) if n in kept]


def build(query: str, max_terms: int = MAX_TERMS, max_patterns: int = MAX_PATTERNS) -> Terms:
    """The full-text terms of ``query``; empty when nothing usable remains.

    At most ``max_terms`` distinct words and ``max_patterns`` distinct substrings, the
    longest of each (:func:`longest`): the lexical half's work grows with both (each word
    is a BM25 term checked on every candidate, each pattern an ``ILIKE`` of every
    candidate's text), so a query at the input cap costs what a long question does, the
    same idea as embedding at most the model's window of a query."""
    lexemes: list[str] = []
    substrings: list[str] = []
    for run in _RUNS.findall(query):
        if len(run) < _MIN_RUN:
            continue
        if _IS_CJK.match(run):
            substrings.extend(_trigrams(run))
            continue
        lexemes.extend(_lexemes(run))
        core = run.strip(".,;:!?\"'()[]{}")
        if len(_WORD.findall(core)) > 1 and _IDENTIFIER_PUNCT.search(core):
            substrings.append(core)
    lexemes = longest(list(dict.fromkeys(lexemes)), max_terms)
    substrings = [s for s in dict.fromkeys(substrings) if len(s) >= _MIN_RUN]
    substrings = longest(substrings, max_patterns)
    tsquery = " | ".join(f"'{lexeme}'" for lexeme in lexemes) or None
    return Terms(tsquery, tuple(like_pattern(s) for s in substrings), tuple(lexemes))
