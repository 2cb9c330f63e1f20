"""list_memories and list_episodes: front-to-back budgets (docs/tools.md, "List budgets").

The budget decides, per typed listed row, whether its text fields are cut and by which ref
the caller gets them back (:class:`Listed`); ``service.mcp.render.listing`` renders the
wire row with its markers from that record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Final, Generic, TypeVar

from service.mcp.shaping.rows import RefKind, ref_for_id
from service.memory.episodes import ListedEpisode
from service.memory.memories.listing import ListedMemory

LIST_MEMORIES_BUDGET_CHARS: Final = 1_000_000
"""Budget of ``list_memories`` over ``content``."""


LIST_EPISODES_BUDGET_CHARS: Final = 800_000
"""Budget of ``list_episodes`` over ``summary`` and ``keywords`` together."""

R = TypeVar("R", ListedMemory, ListedEpisode)


@dataclasses.dataclass(frozen=True, slots=True)
class Cut:
    """How a listed row was trimmed: each of its text fields longer than ``chars`` code
    points is sent as that prefix (with its own markers); ``ref`` is the way back."""

    chars: int
    ref: str


@dataclasses.dataclass(frozen=True, slots=True)
class Listed(Generic[R]):
    """One listed row as the budget leaves it: the library's row (always whole) and its
    cut, None when it goes whole."""

    row: R
    cut: Cut | None = None


def budget_list_memories(
    rows: Sequence[ListedMemory],
    preview_chars: int,
    budget_chars: int = LIST_MEMORIES_BUDGET_CHARS,
) -> tuple[list[Listed[ListedMemory]], bool]:
    """Bound a ``list_memories`` response over ``content`` (docs/tools.md, "List budgets", bug-255).

    See :func:`_budget_list` for the rule. Degraded rows gain ``ref: "mem:<id>"``. Returns
    the rows and whether any row was actually trimmed. The caller adds ``budget_chars`` only
    in that case.
    """
    return _budget_list(rows, _memory_texts, "mem", preview_chars, budget_chars)


def budget_list_episodes(
    rows: Sequence[ListedEpisode],
    preview_chars: int,
    budget_chars: int = LIST_EPISODES_BUDGET_CHARS,
) -> tuple[list[Listed[ListedEpisode]], bool]:
    """Bound a ``list_episodes`` response over ``summary`` + ``keywords``.

    Both text columns share one budget, because both go through the same write cap and
    budgeting only one would leave half the response unbounded. Each field is trimmed on its
    own (``summary_len``/``summary_truncated``, ``keywords_len``/``keywords_truncated``).
    Degraded rows gain ``ref: "ep:<id>"``. The return value is as for
    :func:`budget_list_memories`.
    """
    return _budget_list(rows, _episode_texts, "ep", preview_chars, budget_chars)


def _memory_texts(row: ListedMemory) -> tuple[str, ...]:
    return (row.content,)


def _episode_texts(row: ListedEpisode) -> tuple[str, ...]:
    return (row.summary, row.keywords)


def _budget_list(
    rows: Sequence[R],
    texts: Callable[[R], tuple[str, ...]],
    kind: RefKind,
    preview_chars: int,
    budget_chars: int,
) -> tuple[list[Listed[R]], bool]:
    """Spend a list budget front to back, since listings arrive newest first.

    The first row is always whole. The first row that would push a non-zero running total
    of its ``texts`` over ``budget_chars`` spends the budget. From that row on, every text
    longer than ``preview_chars`` becomes its preview, and a row that lost text gains its
    ref. Rows are never dropped, because a short listing reads like a smaller corpus.
    """
    if preview_chars <= 0:
        return [Listed(row) for row in rows], False
    shaped: list[Listed[R]] = []
    used = 0
    spent = trimmed_any = False
    for row in rows:
        fields = texts(row)
        size = sum(len(text) for text in fields)
        spent = spent or (used > 0 and used + size > budget_chars)
        used += size
        cut = _cut(row.id, fields, kind, preview_chars) if spent else None
        trimmed_any = trimmed_any or cut is not None
        shaped.append(Listed(row, cut))
    return shaped, trimmed_any


def _cut(row_id: object, texts: tuple[str, ...], kind: RefKind, cap: int) -> Cut | None:
    """The cut of a spent row, None when no text is longer than ``cap`` or its id cannot
    form a ref (a trimmed row needs a way back)."""
    if not any(len(text) > cap for text in texts):
        return None
    ref = ref_for_id(kind, row_id)
    return None if ref is None else Cut(cap, ref)
