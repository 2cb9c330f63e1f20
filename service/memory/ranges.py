"""get_contents range objects: just the part of a long record a client needs
(docs/tools.md, "get_contents ranges").

A ref may be an object ``{ref, span?, passage?, revision?}`` instead of a string, with at
most one selector:

* ``span: [start, end]``: characters of the **stored** text (an episode's summary, without
  the ``[Episode] `` label), ``0 <= start < end``; an end past the text is clamped and the
  range reports what was served;
* ``passage: i`` or ``[first, last]`` (inclusive, ``0 <= first <= last``): the record's
  current passages (docs/architecture.md, "Passages"), in text order; the slice runs from
  the first one's start to the last one's end.

``revision`` (12 hex digits, what ``reconstruct``'s ``expand`` carries) must be the
revision of the current text. A range that cannot be served exactly is never widened: it
lands in ``unresolved`` with a reason (:data:`Reason`). Ownership comes first: a ref the
caller's agent cannot read is ``missing``, whatever its range says.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias

from service.db import contents as contents_queries
from service.memory import contents
from service.memory.contents import ContentItem, EpisodeItem, ItemRange
from service.memory.library import Library
from service.models import TenantId

Reason: TypeAlias = Literal[
    "invalid_range",
    "span_out_of_range",
    "no_current_passages",
    "passage_out_of_range",
    "stale_revision",
]

EPISODE_LABEL: Final = "[Episode] "
REVISION_CHARS: Final = 12


def revision(text: str) -> str:
    """The first 12 hex digits of SHA-256 over ``text``'s UTF-8 bytes: a range handed back
    later is refused when the record's text has changed since."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:REVISION_CHARS]


@dataclasses.dataclass(frozen=True, slots=True)
class Wanted:
    """One parsed ref object: ``span`` or ``passages`` (inclusive indices) or neither,
    ``revision`` when given; ``invalid`` when the object's shape is wrong."""

    ref: str
    span: tuple[int, int] | None = None
    passages: tuple[int, int] | None = None
    revision: str | None = None
    invalid: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One requested ref in request order: ``echo`` as sent (a string or the object), the
    item served (whole, or the range's slice), or ``unresolved`` (a :data:`Reason`);
    neither: ``missing``."""

    echo: object
    ref: str
    item: ContentItem | None
    unresolved: Reason | None = None


def _index(value: object) -> int | None:
    """A non-negative JSON integer (never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _pair(value: object) -> tuple[int, int] | None:
    """``[a, b]`` of non-negative integers, else None."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    first, last = _index(value[0]), _index(value[1])
    return None if first is None or last is None else (first, last)


def parse(raw: Mapping[str, object]) -> Wanted:
    """A ref object as :class:`Wanted`; ``invalid`` for two selectors, a span whose end is
    not past its start, passages out of order or a non-string revision."""
    ref = raw.get("ref")
    name = ref if isinstance(ref, str) else str(ref)
    stamp = raw.get("revision")
    if stamp is not None and not isinstance(stamp, str):
        return Wanted(name, invalid=True)
    has_span, has_passage = raw.get("span") is not None, raw.get("passage") is not None
    if has_span and has_passage:
        return Wanted(name, revision=stamp, invalid=True)
    if has_span:
        span = _pair(raw["span"])
        ok = span is not None and span[1] > span[0]
        return Wanted(name, span=span, revision=stamp, invalid=not ok)
    if has_passage:
        single = _index(raw["passage"])
        chosen = (single, single) if single is not None else _pair(raw["passage"])
        ok = chosen is not None and chosen[0] <= chosen[1]
        return Wanted(name, passages=chosen, revision=stamp, invalid=not ok)
    return Wanted(name, revision=stamp)


def stored_text(item: ContentItem) -> str:
    """The text a range counts in: a memory's content, an episode's summary (no label)."""
    if isinstance(item, EpisodeItem) and item.content.startswith(EPISODE_LABEL):
        return item.content[len(EPISODE_LABEL) :]
    return item.content


def served(
    item: ContentItem, wanted: Wanted, spans: Sequence[tuple[int, int]] | None
) -> ContentItem | Reason:
    """``item`` cut to ``wanted``'s range, or why it cannot be served exactly. ``spans``
    are the record's current passages (None: not read, the range names none)."""
    text = stored_text(item)
    if wanted.invalid:
        return "invalid_range"
    if wanted.revision is not None and wanted.revision != revision(text):
        return "stale_revision"
    if wanted.span is not None:
        start, end = wanted.span
        if start >= len(text):
            return "span_out_of_range"
        return _cut(item, text, ItemRange((start, min(end, len(text))), len(text)))
    if wanted.passages is None:
        return item
    if not spans:
        return "no_current_passages"
    first, last = wanted.passages
    if last >= len(spans):
        return "passage_out_of_range"
    start, end = spans[first][0], min(spans[last][1], len(text))
    if start >= end:
        return "passage_out_of_range"  # a passage in an episode's keywords, past its summary
    return _cut(item, text, ItemRange((start, end), len(text), (first, last), len(spans)))


def _cut(item: ContentItem, text: str, found: ItemRange) -> ContentItem:
    start, end = found.span
    return dataclasses.replace(item, content=text[start:end], range=found)


async def resolve(
    lib: Library, tenant_id: TenantId, agent_id: str, refs: Sequence[object]
) -> list[Entry]:
    """Every ref (a string or a range object) in request order: the whole item, the
    range's slice, ``unresolved`` or missing. One statement for the rows
    (``contents.resolve``) and, only when a passage range names a found record, one for
    their current passages."""
    wanted = [parse(raw) if isinstance(raw, Mapping) else None for raw in refs]
    names = [w.ref if w is not None else raw for w, raw in zip(wanted, refs, strict=True)]
    found = await contents.resolve(lib, tenant_id, agent_id, names)
    spans = await _passages(lib, tenant_id, found, wanted)
    entries = []
    for raw, want, (name, item) in zip(refs, wanted, found, strict=True):
        if item is None or want is None:
            entries.append(Entry(raw if want is not None else name, name, item))
            continue
        cut = served(item, want, spans.get(item.ref_key))
        if isinstance(cut, str):
            entries.append(Entry(raw, name, None, cut))
        else:
            entries.append(Entry(raw, name, cut))
    return entries


async def _passages(
    lib: Library,
    tenant_id: TenantId,
    found: Sequence[tuple[str, ContentItem | None]],
    wanted: Sequence[Wanted | None],
) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """The current passages of the found records a valid passage range names."""
    keys = {
        item.ref_key
        for (_, item), want in zip(found, wanted, strict=True)
        if item is not None and want is not None and want.passages is not None
    }
    if not keys:
        return {}
    memories = sorted(row_id for kind, row_id in keys if kind == "mem")
    episodes = sorted(row_id for kind, row_id in keys if kind == "ep")
    async with lib.db.tenant_tx(tenant_id) as conn:
        return await contents_queries.passage_spans(conn, tenant_id, memories, episodes)
