"""get_contents: the batch budget (docs/tools.md, "Batch budget")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.mcp.shaping.rows import Row, ShapedRow, text_len

GET_CONTENTS_BUDGET_CHARS: Final = 40_000
"""Per-batch budget of ``get_contents``."""


def budget_contents(
    found: Sequence[tuple[str, Row | None]],
    budget_chars: int = GET_CONTENTS_BUDGET_CHARS,
) -> dict[str, object]:
    """Assemble a ``get_contents`` response under its batch budget.

    ``found`` lists every requested ref in request order, each with its resolved item or
    ``None`` when it was malformed, foreign or absent. Refs are processed in that order:
    ``None`` goes to ``missing``. The first found item is always admitted whole. When a later
    item would push the sum of returned ``content`` lengths over ``budget_chars``, that ref
    and every remaining ref go to ``deferred`` in request order, including unresolvable
    ones. ``budget_chars`` is then added to the response. Items are never cut: this is the
    only way back to full text. Duplicated refs are handled independently.
    """
    items: list[ShapedRow] = []
    missing: list[str] = []
    used = 0
    for position, (ref, item) in enumerate(found):
        if item is None:
            missing.append(ref)
            continue
        size = text_len(item, "content")
        if items and used + size > budget_chars:
            deferred = [later for later, _ in found[position:]]
            return _contents_response(items, missing, deferred, budget_chars)
        used += size
        items.append(dict(item))
    return _contents_response(items, missing, [], budget_chars)


def _contents_response(
    items: list[ShapedRow], missing: list[str], deferred: list[str], budget_chars: int
) -> dict[str, object]:
    """The ``get_contents`` success shape. It has no ``ok``
    (docs/tools.md, "Answers and failures")."""
    response: dict[str, object] = {"items": items, "missing": missing, "count": len(items)}
    if deferred:
        response["deferred"] = deferred
        response["budget_chars"] = budget_chars
    return response
