"""list_memories and list_episodes: front-to-back budgets (docs/tools.md, "List budgets")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from service.mcp.shaping.rows import RefKind, Row, ShapedRow, ref_for_id, text_len, trim

LIST_MEMORIES_BUDGET_CHARS: Final = 1_000_000
"""Budget of ``list_memories`` over ``content``."""


LIST_EPISODES_BUDGET_CHARS: Final = 800_000
"""Budget of ``list_episodes`` over ``summary`` and ``keywords`` together."""


def budget_list_memories(
    rows: Sequence[Row],
    preview_chars: int,
    budget_chars: int = LIST_MEMORIES_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Bound a ``list_memories`` response over ``content`` (docs/tools.md, "List budgets", bug-255).

    See :func:`_budget_list` for the rule. Degraded rows gain ``ref: "mem:<id>"``. Returns
    the rows and whether any row was actually trimmed. The caller adds ``budget_chars`` only
    in that case.
    """
    return _budget_list(rows, ("content",), "mem", preview_chars, budget_chars)


def budget_list_episodes(
    rows: Sequence[Row],
    preview_chars: int,
    budget_chars: int = LIST_EPISODES_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Bound a ``list_episodes`` response over ``summary`` + ``keywords``.

    Both text columns share one budget, because both go through the same write cap and
    budgeting only one would leave half the response unbounded. Each field is trimmed on its
    own (``summary_len``/``summary_truncated``, ``keywords_len``/``keywords_truncated``).
    Degraded rows gain ``ref: "ep:<id>"``. The return value is as for
    :func:`budget_list_memories`.
    """
    return _budget_list(rows, ("summary", "keywords"), "ep", preview_chars, budget_chars)


def _budget_list(
    rows: Sequence[Row],
    fields: tuple[str, ...],
    kind: RefKind,
    preview_chars: int,
    budget_chars: int,
) -> tuple[list[ShapedRow], bool]:
    """Spend a list budget front to back, since listings arrive newest first.

    The first row is always whole. The first row that would push a non-zero running total
    of ``fields`` over ``budget_chars`` spends the budget. From that row on, every field
    longer than ``preview_chars`` becomes its preview, and a row that lost text gains its
    ref. Rows are never dropped, because a short listing reads like a smaller corpus.
    """
    if preview_chars <= 0:
        return [dict(row) for row in rows], False
    shaped: list[ShapedRow] = []
    used = 0
    spent = trimmed_any = False
    for row in rows:
        size = sum(text_len(row, field) for field in fields)
        spent = spent or (used > 0 and used + size > budget_chars)
        used += size
        copy = dict(row)
        if spent and _degrade_list_row(copy, fields, kind, preview_chars):
            trimmed_any = True
        shaped.append(copy)
    return shaped, trimmed_any


def _degrade_list_row(row: ShapedRow, fields: Iterable[str], kind: RefKind, cap: int) -> bool:
    """Trim a list row we own to its preview form; report whether any field was cut.

    A row whose ``id`` cannot form a ref is left whole: a trimmed row needs a way back.
    """
    ref = ref_for_id(kind, row.get("id"))
    if ref is None:
        return False
    cut = [trim(row, field, cap) for field in fields]
    if not any(cut):
        return False
    row["ref"] = ref
    return True
