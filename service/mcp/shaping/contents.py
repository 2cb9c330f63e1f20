"""get_contents: the batch budget (docs/tools.md, "Batch budget")."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final

from service.mcp.render import contents as render
from service.memory.contents import ContentItem, ContentsResult
from service.memory.ranges import Entry

GET_CONTENTS_BUDGET_CHARS: Final = 40_000
"""Per-batch budget of ``get_contents``."""


def item_cost(item: ContentItem) -> int:
    """What one item spends of the batch budget: the whole item as the caller receives it
    (CPersona 2.6), each field's value counted once, a string by its length and anything
    else serialised (``ensure_ascii=False``). ``source`` has a cap of its own (8,000
    serialised characters), so a budget of content alone would not bound the answer."""
    return sum(
        len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))
        for value in render.item(item).values()
    )


def budget_contents(
    found: Sequence[tuple[str, ContentItem | None] | Entry],
    budget_chars: int = GET_CONTENTS_BUDGET_CHARS,
    cost: Callable[[ContentItem], int] = item_cost,
) -> ContentsResult:
    """Spend a ``get_contents`` batch budget over the resolved refs.

    ``found`` lists every requested ref in request order, each with its resolved item or
    ``None`` when it was malformed, foreign or absent (or as a range
    :class:`~service.memory.ranges.Entry`, which may be unresolved). Refs are processed in
    that order: ``None`` goes to ``missing``, an unresolved range to ``unresolved``. The
    first found item is always admitted whole. When a later item would push the sum of the
    items' ``cost`` (:func:`item_cost`) over ``budget_chars``, that ref and every remaining
    ref go to ``deferred`` in request order, as sent, including unresolvable ones (the
    answer then names ``budget_chars``). Items are never cut: this is the only way back to
    full text (a range object's item is its slice). Duplicated refs are handled
    independently.
    """
    entries = [e if isinstance(e, Entry) else Entry(e[0], e[0], e[1]) for e in found]
    items: list[ContentItem] = []
    missing: list[str] = []
    unresolved: list[tuple[str, str]] = []
    used = 0
    for position, entry in enumerate(entries):
        if entry.unresolved is not None:
            unresolved.append((entry.ref, entry.unresolved))
            continue
        if entry.item is None:
            missing.append(entry.ref)
            continue
        size = cost(entry.item)
        if items and used + size > budget_chars:
            deferred = tuple(later.echo for later in entries[position:])
            return ContentsResult(tuple(items), tuple(missing), deferred, tuple(unresolved))
        used += size
        items.append(entry.item)
    return ContentsResult(tuple(items), tuple(missing), (), tuple(unresolved))
