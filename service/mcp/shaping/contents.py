"""get_contents: the batch budget (docs/tools.md, "Batch budget")."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Final

from service.mcp.render import contents as render
from service.memory.contents import ContentItem, ContentsResult

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
    found: Sequence[tuple[str, ContentItem | None]],
    budget_chars: int = GET_CONTENTS_BUDGET_CHARS,
    cost: Callable[[ContentItem], int] = item_cost,
) -> ContentsResult:
    """Spend a ``get_contents`` batch budget over the resolved refs.

    ``found`` lists every requested ref in request order, each with its resolved item or
    ``None`` when it was malformed, foreign or absent. Refs are processed in that order:
    ``None`` goes to ``missing``. The first found item is always admitted whole. When a later
    item would push the sum of the items' ``cost`` (:func:`item_cost`) over
    ``budget_chars``, that ref and every remaining ref go to ``deferred`` in request order,
    including unresolvable ones (the answer then names ``budget_chars``). Items are never
    cut: this is the only way back to full text. Duplicated refs are handled independently.
    """
    items: list[ContentItem] = []
    missing: list[str] = []
    used = 0
    for position, (ref, item) in enumerate(found):
        if item is None:
            missing.append(ref)
            continue
        size = cost(item)
        if items and used + size > budget_chars:
            deferred = tuple(later for later, _ in found[position:])
            return ContentsResult(tuple(items), tuple(missing), deferred)
        used += size
        items.append(item)
    return ContentsResult(tuple(items), tuple(missing))
