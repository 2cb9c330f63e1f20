"""recall and recall_with_context: compact rows, previews, excerpts and the full-content
budget (docs/tools.md, "Preview tier"; docs/tools.md, "Full-content budget")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.mcp.shaping.compact import compact_row
from service.mcp.shaping.excerpt import excerpts
from service.mcp.shaping.rows import Row, ShapedRow, previewed

FULL_CONTENT_BUDGET_CHARS: Final = 200_000
"""Per-response budget of ``recall(full_content=true)`` (docs/tools.md, "Full-content budget",
bug-211)."""


def preview(rows: Sequence[Row], preview_chars: int) -> list[ShapedRow]:
    """Trim recall messages to the preview tier, the default recall shape.

    A row with a truthy ``ref`` whose ``content`` is longer than ``preview_chars`` becomes
    its first ``preview_chars`` code points plus ``content_len`` and ``content_truncated``.
    Conversation echoes are trimmed the same way (see :func:`trimmable`). Shorter rows,
    the profile row and rows whose content is not a string are copied unchanged.
    ``preview_chars <= 0`` disables trimming.
    """
    if preview_chars <= 0:
        return [dict(row) for row in rows]
    return [previewed(row, preview_chars) for row in rows]


def spend_best_first(
    rows: Sequence[Row],
    preview_chars: int,
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Bound a ``full_content=true`` recall in characters (docs/tools.md, "Full-content budget",
    bug-211, bug-214), ``rows`` best first (best hit in ``recall``, newest in
    ``recall_with_context``).

    Rows are admitted whole while the running total of string ``content`` lengths fits.
    The first row is admitted whatever its size. The first row that would push a non-zero
    total over ``budget_chars`` spends the budget: it and every later row get the preview
    form (only trimmable rows longer than ``preview_chars`` change). The profile row is
    never trimmed but still counts. Returns the rows and whether the budget was spent. The
    caller then adds ``full_content_budget_chars``, even when no row needed trimming
    (docs/tools.md, "Full-content budget"). With ``preview_chars <= 0`` every row is
    returned whole and the budget is never spent.
    """
    if preview_chars <= 0:
        return [dict(row) for row in rows], False
    shaped: list[ShapedRow] = []
    used = 0
    spent = False
    for row in rows:
        content = row.get("content")
        if isinstance(content, str):
            spent = spent or (used > 0 and used + len(content) > budget_chars)
            used += len(content)
        shaped.append(previewed(row, preview_chars) if spent else dict(row))
    return shaped, spent


def with_excerpts(
    rows: Sequence[Row], full_rows: Sequence[Row], query: str, preview_chars: int
) -> list[ShapedRow]:
    """``rows`` (shaped from ``full_rows``, position by position) with ``excerpt`` and
    ``excerpt_offset`` on the trimmed rows with a ref whose best match lies beyond the
    preview (see :mod:`service.mcp.shaping.excerpt`). Every row counts in the weights."""
    texts = [row.get("content") for row in full_rows]
    plain = [text if isinstance(text, str) else "" for text in texts]
    wanted = [bool(row.get("ref") and row.get("content_truncated")) for row in rows]
    shaped: list[ShapedRow] = []
    for row, found in zip(rows, excerpts(plain, wanted, query, preview_chars), strict=True):
        extra = {} if found is None else {"excerpt": found.text, "excerpt_offset": found.offset}
        shaped.append({**row, **extra})
    return shaped


def shape_rows(
    full: Sequence[Row],
    *,
    preview_chars: int,
    full_content: bool,
    query: str = "",
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Shape a recall's full rows, best first, for an MCP caller (docs/tools.md, "Where
    trimming happens"): every row made compact (:func:`service.mcp.shaping.compact.compact_row`),
    then exactly one of :func:`preview` (default) or :func:`spend_best_first`
    (``full_content=True``), and trimmed rows get their excerpt for ``query``. Returns the
    rows, in the order given, and whether the full-content budget was spent."""
    compacted = [compact_row(row) for row in full]
    spent = False
    if full_content:
        rows, spent = spend_best_first(compacted, preview_chars, budget_chars)
    else:
        rows = preview(compacted, preview_chars)
    return with_excerpts(rows, full, query, preview_chars), spent
