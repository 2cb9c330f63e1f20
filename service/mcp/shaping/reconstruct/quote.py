"""Quotes of stored text: an item's head quote, its excerpts, and a head record's passages.

The rules are documented for callers (docs/tools.md, "reconstruct: quoting"). In short:

* **Head quote** at a cap (800 for the first five items, 400 after): a text no longer
  than the cap is quoted whole (``basis "whole"``, ``ranges [[0, len]]``). A longer text
  is divided into blocks (``divide.blocks``; ``basis "lexical"``, the service stores no
  blocks), the blocks are ranked (``divide.rank_blocks``), each widened to its governing
  range; ranges are taken in rank order, skipping one that overlaps a range taken, while
  they fit the cap (the first that does not fit ends the fill), and shown in text order,
  touching ranges merged and the rest joined by :data:`SEPARATOR`. When the best range
  alone is longer than the cap its first ``cap`` characters are shown with
  ``context_incomplete`` and an ``expand`` naming the whole range. A text that divides
  into one block is quoted from its start (``basis "start"``, ``expand`` the whole text).
* **Excerpt** (another claim of the item) at the preview cap (500): whole when short,
  else the best block's governing range alone, cut to the cap when longer. CPersona 2.6
  shows the start of a record that has no stored blocks or nodes; every record here is
  in that state, and the start of a long record rarely holds the match (measured for
  recall: about two thirds of the evidence in long rows lies past a 500-character
  preview, docs/tools.md), so the excerpt takes the best range by the head quote's
  ranking instead, with the descriptors of a head quote (``ranges``, ``content_len``).
* **Passages** of a head record, for the "whole" payload sequence: every governing
  range at most 800 characters (cut to it otherwise), best first, none overlapping a
  better one.

Deterministic: block ranking breaks ties by block order, and nothing else is chosen.
The cost of a quote in a character budget is ``len(content)``, separators included.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from typing import Final, Literal

from service.mcp.shaping.reconstruct import divide
from service.mcp.shaping.reconstruct.divide import Span
from service.mcp.shaping.reconstruct.records import Record

SEPARATOR: Final = " \u2026 "
"""Joins two shown ranges with text between them (space, U+2026, space)."""

PASSAGE_CHARS: Final = 800
"""The longest passage of the "whole" sequence."""

QuoteBasis = Literal["whole", "lexical", "start"]


@dataclasses.dataclass(frozen=True, slots=True)
class Expand:
    """What to pass ``get_contents`` to read on: ``{ref, span, revision}``."""

    ref: str
    span: Span
    revision: str


@dataclasses.dataclass(frozen=True, slots=True)
class Quote:
    """A quote of one record.

    ``content`` is what is shown: ``ranges`` (spans of the stored text, text order, none
    touching) joined by :data:`SEPARATOR`. ``content_len`` is the stored text's full
    length. ``truncated`` (the wire's ``content_truncated``) is True unless the quote is
    whole. ``context_incomplete`` says the shown passage is cut from a longer governing
    range; ``expand`` names what to read further (the whole range, or the whole text for a
    record quoted from its start).
    """

    ref: str
    content: str
    basis: QuoteBasis
    ranges: tuple[Span, ...]
    content_len: int
    context_incomplete: bool = False
    expand: Expand | None = None

    @property
    def truncated(self) -> bool:
        return self.basis != "whole"


@dataclasses.dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a head record: ``[start, end)``; ``cut_from`` is the end of the
    governing range it was cut from (None: the whole range)."""

    start: int
    end: int
    cut_from: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Passages:
    """A head record divided for the "whole" sequence: its basis and passages best first."""

    record: Record
    basis: QuoteBasis
    passages: tuple[Passage, ...]


def shown(text: str, ranges: Sequence[Span]) -> str:
    """The text of ``ranges`` joined by the separator."""
    return SEPARATOR.join(text[start:end] for start, end in ranges)


def shown_len(ranges: Sequence[Span]) -> int:
    """``len(shown(text, ranges))`` without the text."""
    return sum(end - start for start, end in ranges) + len(SEPARATOR) * max(0, len(ranges) - 1)


def _whole(record: Record) -> Quote:
    text = record.text
    return Quote(record.ref, text, "whole", ((0, len(text)),), len(text))


def _from_start(record: Record, cap: int) -> Quote:
    text = record.text
    return Quote(
        record.ref,
        text[:cap],
        "start",
        ((0, min(cap, len(text))),),
        len(text),
        expand=Expand(record.ref, (0, len(text)), divide.revision(text)),
    )


def _cut_range(record: Record, start: int, end: int, cap: int) -> Quote:
    """The first ``cap`` characters of the governing range ``[start, end)``."""
    text = record.text
    return Quote(
        record.ref,
        text[start : start + cap],
        "lexical",
        ((start, start + cap),),
        len(text),
        context_incomplete=True,
        expand=Expand(record.ref, (start, end), divide.revision(text)),
    )


def _fill(
    division: divide.Division, ranked: Sequence[int], cap: int
) -> tuple[list[Span], Span | None]:
    """Governing ranges in rank order while they fit ``cap``: ``(ranges, None)``, or
    ``([], best range)`` when the best range alone is longer than the cap."""
    taken: list[Span] = []
    for index in ranked:
        if divide.overlaps(taken, division.spans[index]):
            continue  # a governing range contains its block: it would overlap too
        start, end, _ = divide.governing_range(division, index)
        if divide.overlaps(taken, (start, end)):
            continue
        if shown_len(divide.joined([*taken, (start, end)])) > cap:
            if not taken:
                return [], (start, end)
            break
        bisect.insort(taken, (start, end))
    return divide.joined(taken), None


def _ranked(
    record: Record, spans: Sequence[Span], query: str, closeness: Sequence[float] | None
) -> list[int]:
    """Block indices best first (``divide.rank_blocks``). With a passage that matched by
    meaning (``record.part``) and no ``closeness`` given, the passage's blocks come first
    when it wins as in recall's excerpt (docs/tools.md, "Response economy"): its cosine
    plus its best block's share of the best trigram overlap beats every other block's
    share; the order is otherwise unchanged."""
    grams = divide.trigrams(query)
    ranked = divide.rank_blocks(record.text, spans, grams, closeness)
    if record.part is None or closeness is not None:
        return ranked
    inside = set(record.overlapping(spans))
    overlap = [float(divide.shared_trigrams(record.text[s:e], grams)) for s, e in spans]
    top = max(overlap, default=0.0) or 1.0
    best_in = max((overlap[i] / top for i in inside), default=None)
    best_out = max((overlap[i] / top for i in range(len(spans)) if i not in inside), default=0.0)
    if best_in is None or record.part[2] + best_in <= best_out + 1e-9:
        return ranked
    return [i for i in ranked if i in inside] + [i for i in ranked if i not in inside]


def head_quote(
    record: Record, query: str, cap: int, closeness: Sequence[float] | None = None
) -> Quote:
    """The head quote of ``record`` for ``query`` at ``cap`` characters (``cap >= 1``).

    ``closeness`` is one value per block of ``divide.blocks(record.text)`` (higher is
    nearer the query vector) or None: then the record's passage may rank first
    (:func:`_ranked`)."""
    text = record.text
    if len(text) <= cap:
        return _whole(record)
    division = divide.divide(text)
    if len(division.spans) <= 1:
        return _from_start(record, cap)
    ranked = _ranked(record, division.spans, query, closeness)
    ranges, oversized = _fill(division, ranked, cap)
    if oversized is not None:
        return _cut_range(record, *oversized, cap)
    return Quote(record.ref, shown(text, ranges), "lexical", tuple(ranges), len(text))


def excerpt_quote(
    record: Record, query: str, cap: int, closeness: Sequence[float] | None = None
) -> Quote:
    """The excerpt of ``record``: whole when it fits ``cap``, else its best governing range
    (its start when it divides into one block), cut to ``cap`` when longer. When the range
    rule wanted more context than a governing range may hold, ``context_incomplete`` is
    set and ``expand`` names the range one block wider on each side."""
    text = record.text
    if len(text) <= cap:
        return _whole(record)
    division = divide.divide(text)
    spans = division.spans
    if len(spans) <= 1:
        return _from_start(record, cap)
    best = _ranked(record, spans, query, closeness)[0]
    start, end, complete = divide.governing_range(division, best)
    if end - start > cap:
        return _cut_range(record, start, end, cap)
    quote = Quote(record.ref, text[start:end], "lexical", ((start, end),), len(text))
    if complete:
        return quote
    first = next(i for i, span in enumerate(spans) if span[0] == start)
    last = next(i for i, span in enumerate(spans) if span[1] == end)
    wider = (spans[max(0, first - 1)][0], spans[min(len(spans) - 1, last + 1)][1])
    expand = Expand(record.ref, wider, divide.revision(text))
    return dataclasses.replace(quote, context_incomplete=True, expand=expand)


def passages(
    record: Record,
    query: str,
    cap: int = PASSAGE_CHARS,
    closeness: Sequence[float] | None = None,
) -> Passages:
    """The passages of a head record, best first: the whole text when it fits ``cap``,
    its start when it divides into one block, else every governing range in block rank
    order that overlaps no better one, each cut to its first ``cap`` characters."""
    text = record.text
    if len(text) <= cap:
        return Passages(record, "whole", (Passage(0, len(text)),))
    division = divide.divide(text)
    spans = division.spans
    if len(spans) <= 1:
        return Passages(record, "start", (Passage(0, cap, len(text)),))
    taken: list[Span] = []
    found: list[Passage] = []
    for index in _ranked(record, spans, query, closeness):
        if divide.overlaps(taken, spans[index]):
            continue
        start, end, _ = divide.governing_range(division, index)
        if divide.overlaps(taken, (start, end)):
            continue
        bisect.insort(taken, (start, end))
        cut = end - start > cap
        found.append(Passage(start, start + cap, end) if cut else Passage(start, end))
    return Passages(record, "lexical", tuple(found))


NODE_ORDER: Final = 3
"""How many of a quoted record's best blocks the trace names."""


def node_order(record: Record, query: str, closeness: Sequence[float] | None = None) -> list[int]:
    """The indices of ``record``'s best blocks for ``query`` (``divide.blocks``, ranked as
    a head quote ranks them), at most :data:`NODE_ORDER`: what the trace's ``node_order``
    shows of a quoted record."""
    text = record.text
    spans = divide.blocks(text)
    ranked = divide.rank_blocks(text, spans, divide.trigrams(query), closeness)
    return ranked[:NODE_ORDER]


def passage_quote(divided: Passages, taken: Sequence[int]) -> Quote:
    """The head quote made of the passages ``taken`` (indices into ``divided.passages``),
    shown in text order. A passage cut from a longer range makes the quote
    ``context_incomplete`` (not for a record quoted from its start) with an ``expand``
    naming the first such range in text order."""
    record = divided.record
    chosen = sorted((divided.passages[j] for j in taken), key=lambda p: (p.start, p.end))
    ranges = divide.joined([(p.start, p.end) for p in chosen])
    quote = Quote(
        record.ref, shown(record.text, ranges), divided.basis, tuple(ranges), len(record.text)
    )
    cut = next((p for p in chosen if p.cut_from is not None), None)
    if cut is None or cut.cut_from is None:
        return quote
    expand = Expand(record.ref, (cut.start, cut.cut_from), divide.revision(record.text))
    return dataclasses.replace(quote, context_incomplete=divided.basis != "start", expand=expand)
