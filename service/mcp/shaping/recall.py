"""recall and recall_with_context: previews, excerpts and the full-content budget
(docs/tools.md, "Preview tier"; docs/tools.md, "Full-content budget").

Shaping decides, per typed row, whether and where its content is cut and which excerpt
it carries (:class:`service.mcp.shaping.rows.Shaped`); it copies no text and builds no
dict. The compact wire row is rendered from that record by ``service.mcp.render.recall``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from service.mcp.shaping.excerpt import Part, excerpts
from service.mcp.shaping.rows import RecallRow, Shaped, previewed
from service.memory.recall.records import Recalled

EPISODE_PREFIX: Final = "[Episode] "
"""What an episode row's content adds before its summary (the summary is where its
passages' offsets start)."""

FULL_CONTENT_BUDGET_CHARS: Final = 200_000
"""Per-response budget of ``recall(full_content=true)`` (docs/tools.md, "Full-content budget",
bug-211)."""


def preview(rows: Sequence[RecallRow], preview_chars: int) -> list[Shaped]:
    """The preview tier, the default recall shape: every row, each cut or whole.

    A row with a ref whose ``content`` is longer than ``preview_chars`` is cut to its first
    ``preview_chars`` code points (the wire then adds ``content_len`` and
    ``content_truncated``). Conversation echoes are cut the same way (see
    :func:`service.mcp.shaping.rows.trimmable`). Shorter rows and the profile row go whole.
    ``preview_chars <= 0`` disables trimming.
    """
    return [previewed(row, preview_chars) for row in rows]


def spend_best_first(
    rows: Sequence[RecallRow],
    preview_chars: int,
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[Shaped], bool]:
    """Bound a ``full_content=true`` recall in characters (docs/tools.md, "Full-content budget",
    bug-211, bug-214), ``rows`` best first (best hit in ``recall``, newest in
    ``recall_with_context``).

    Rows are admitted whole while the running total of ``content`` lengths fits.
    The first row is admitted whatever its size. The first row that would push a non-zero
    total over ``budget_chars`` spends the budget: it and every later row get the preview
    form (only trimmable rows longer than ``preview_chars`` change). The profile row is
    never trimmed but still counts. Returns the rows and whether the budget was spent. The
    caller then adds ``full_content_budget_chars``, even when no row needed trimming
    (docs/tools.md, "Full-content budget"). With ``preview_chars <= 0`` every row is
    returned whole and the budget is never spent.
    """
    if preview_chars <= 0:
        return [Shaped(row) for row in rows], False
    shaped: list[Shaped] = []
    used = 0
    spent = False
    for row in rows:
        size = len(row.content)
        spent = spent or (used > 0 and used + size > budget_chars)
        used += size
        shaped.append(previewed(row, preview_chars) if spent else Shaped(row))
    return shaped, spent


def part_of(row: RecallRow) -> Part | None:
    """The passage that matched ``row`` best by meaning, in ``row.content``'s positions
    (an episode's content is its summary after :data:`EPISODE_PREFIX`; a passage in its
    keywords is cut at the content's end), or None."""
    if not isinstance(row, Recalled) or row.passage is None:
        return None
    shift = len(EPISODE_PREFIX) if row.kind == "ep" else 0
    start = row.passage.start + shift
    end = min(row.passage.end + shift, len(row.content))
    return Part(start, end, row.passage.cosine) if start < end else None


def _excerpted(shaped: list[Shaped], query: str, preview_chars: int) -> list[Shaped]:
    """``shaped`` with the excerpt of every cut row with a ref whose best match (by its
    words, or its passage's meaning) lies beyond its preview (see
    :mod:`service.mcp.shaping.excerpt`); every row counts in the weights. Only a row that
    gains an excerpt is replaced."""
    wanted = [item.shown is not None and item.ref is not None for item in shaped]
    if not any(wanted):
        return shaped
    texts = [item.row.content for item in shaped]
    parts = [part_of(item.row) for item in shaped]
    found = excerpts(texts, wanted, query, preview_chars, parts)
    return [
        item if passage is None else dataclasses.replace(item, excerpt=passage)
        for item, passage in zip(shaped, found, strict=True)
    ]


def shape_rows(
    full: Sequence[RecallRow],
    *,
    preview_chars: int,
    full_content: bool,
    query: str = "",
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[Shaped], bool]:
    """Shape a recall's rows, best first, for an MCP caller (docs/tools.md, "Where
    trimming happens"): exactly one of :func:`preview` (default) or
    :func:`spend_best_first` (``full_content=True``), and cut rows get their excerpt for
    ``query``. Returns the shaped rows, in the order given, and whether the full-content
    budget was spent. The compact form is the renderer's (``render.recall.shaped``)."""
    spent = False
    if full_content:
        shaped, spent = spend_best_first(full, preview_chars, budget_chars)
    else:
        shaped = preview(full, preview_chars)
    return _excerpted(shaped, query, preview_chars), spent
