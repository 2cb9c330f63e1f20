"""get_contents: the batch budget (docs/tools.md, "Batch budget")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.memory.contents import ContentItem, ContentsResult

GET_CONTENTS_BUDGET_CHARS: Final = 40_000
"""Per-batch budget of ``get_contents``."""


def budget_contents(
    found: Sequence[tuple[str, ContentItem | None]],
    budget_chars: int = GET_CONTENTS_BUDGET_CHARS,
) -> ContentsResult:
    """Spend a ``get_contents`` batch budget over the resolved refs.

    ``found`` lists every requested ref in request order, each with its resolved item or
    ``None`` when it was malformed, foreign or absent. Refs are processed in that order:
    ``None`` goes to ``missing``. The first found item is always admitted whole. When a later
    item would push the sum of returned ``content`` lengths over ``budget_chars``, that ref
    and every remaining ref go to ``deferred`` in request order, including unresolvable
    ones (the answer then names ``budget_chars``). Items are never cut: this is the only
    way back to full text. Duplicated refs are handled independently.
    """
    items: list[ContentItem] = []
    missing: list[str] = []
    used = 0
    for position, (ref, item) in enumerate(found):
        if item is None:
            missing.append(ref)
            continue
        size = len(item.content)
        if items and used + size > budget_chars:
            deferred = tuple(later for later, _ in found[position:])
            return ContentsResult(tuple(items), tuple(missing), deferred)
        used += size
        items.append(item)
    return ContentsResult(tuple(items), tuple(missing))
