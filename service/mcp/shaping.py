"""Response shaping at the MCP boundary: previews, refs and character budgets.

The library (``service.memory``) always returns full rows; this module is the only place in
the service that trims them or enforces a response budget (seed "Design principle", spec
§4.1, architecture §7). Keeping that in one pure module means library callers (benchmarks,
in-process consumers) can never be handed a preview, and every budget rule is testable
without a database.

Everything here is pure: functions take JSON-ready mappings, return new dicts and lists,
never mutate their inputs and do no I/O. Copies are shallow; nested values such as
``source`` are shared with the input, which is safe because nothing here writes to them.

Vocabulary shared by every function:

* *preview*: the first ``P`` code points of a text field, a pure prefix with no ellipsis.
  It must be a pure prefix because ``exclude_contents`` matches by starts-with (§4.5), so a
  preview fed back still suppresses its stored row.
* *markers*: ``<field>_len`` (the full length) and ``<field>_truncated: True``. They are
  present only on a row that was actually cut (§4.2).
* *ref*: ``mem:<id>`` / ``ep:<id>``, the handle ``get_contents`` resolves (§4.4, §4.6). A
  row is trimmed only when it carries a ref (recall) or gains one (list tools). Without a
  ref the lost tail would be unreachable.
* ``P <= 0`` turns the preview tier off, and with it every budget that degrades to it:
  degrading to a disabled tier would silently drop content (§4.2, §4.3, §4.7).

Budgets count as they build (streaming-size accounting, architecture §7). Each walks the
rows once, in the order the spec gives, keeps a running total and degrades rows from the
point the budget is spent. None of them builds an oversized response and cuts it afterwards.
Lengths are Unicode code points (Python ``len``), as the spec requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, TypeAlias

from service.memory.contents import MAX_ROW_ID

Row: TypeAlias = Mapping[str, object]
"""A JSON-ready row as the library or the storage layer produced it."""

ShapedRow: TypeAlias = dict[str, object]
"""A new row built by this module; the caller owns it."""

RefKind: TypeAlias = Literal["mem", "ep"]

FULL_CONTENT_BUDGET_CHARS: Final = 200_000
"""Per-response budget of ``recall(full_content=true)`` (§4.3, bug-211)."""

GET_CONTENTS_BUDGET_CHARS: Final = 40_000
"""Per-batch budget of ``get_contents`` (§4.4)."""

LIST_MEMORIES_BUDGET_CHARS: Final = 1_000_000
"""Budget of ``list_memories`` over ``content`` (§4.7)."""

LIST_EPISODES_BUDGET_CHARS: Final = 800_000
"""Budget of ``list_episodes`` over ``summary`` and ``keywords`` together (§4.7)."""

_KINDS: Final[Mapping[str, RefKind]] = {"mem": "mem", "ep": "ep"}


# -- recall: preview tier and full-content budget ------------------------------------------


def preview(rows: Sequence[Row], preview_chars: int) -> list[ShapedRow]:
    """Trim recall messages to the preview tier, the default recall shape (spec §4.2).

    A row with a truthy ``ref`` whose ``content`` is longer than ``preview_chars`` becomes
    its first ``preview_chars`` code points plus ``content_len`` and ``content_truncated``.
    Conversation echoes are trimmed the same way (see :func:`trimmable`). Shorter rows,
    the profile row and rows whose content is not a string are copied unchanged.
    ``preview_chars <= 0`` disables trimming.
    """
    if preview_chars <= 0:
        return [dict(row) for row in rows]
    return [_previewed(row, preview_chars) for row in rows]


def full_content_budget(
    rows: Sequence[Row],
    preview_chars: int,
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Bound a ``full_content=true`` recall in characters (spec §4.3, bug-211, bug-214).

    The walk runs from the last row to the first, because the last row is the valuable end
    in both recall tools (best hit in ``recall``, newest in ``recall_with_context``). Rows
    are admitted whole while the running total of string ``content`` lengths fits. The last
    row is admitted whatever its size. The first row that would push a non-zero total over
    ``budget_chars`` spends the budget: it and every earlier row get the preview form (only
    trimmable rows longer than ``preview_chars`` change). The profile row is never trimmed
    but still counts. Returns the rows and whether the budget was spent. The caller
    then adds ``full_content_budget_chars``, even when no row needed trimming (spec §12.11).
    With ``preview_chars <= 0`` every row is returned whole and the budget is never spent.
    """
    if preview_chars <= 0:
        return [dict(row) for row in rows], False
    shaped: list[ShapedRow] = []
    used = 0
    spent = False
    for row in reversed(rows):
        content = row.get("content")
        if isinstance(content, str):
            spent = spent or (used > 0 and used + len(content) > budget_chars)
            used += len(content)
        shaped.append(_previewed(row, preview_chars) if spent else dict(row))
    shaped.reverse()
    return shaped, spent


def shape_recall(
    response: Mapping[str, object],
    *,
    preview_chars: int,
    full_content: bool,
    budget_chars: int = FULL_CONTENT_BUDGET_CHARS,
) -> dict[str, object]:
    """Shape a library recall response for an MCP caller (spec §4.1).

    Applies exactly one of :func:`preview` (default) or :func:`full_content_budget`
    (``full_content=True``) to ``response["messages"]``. It adds
    ``full_content_budget_chars: budget_chars`` when the budget was spent. Every other key
    (``advisory``, ``gate_fallback``, ...) is carried over as it is. A response whose
    ``messages`` is not a list of objects (the library never produces one) is returned as
    a shallow copy, unshaped.
    """
    shaped = dict(response)
    messages = _rows_of(response.get("messages"))
    if messages is None:
        return shaped
    if not full_content:
        shaped["messages"] = preview(messages, preview_chars)
        return shaped
    budgeted, spent = full_content_budget(messages, preview_chars, budget_chars)
    shaped["messages"] = budgeted
    if spent:
        shaped["full_content_budget_chars"] = budget_chars
    return shaped


# -- get_contents: refs and the batch budget -----------------------------------------------


def format_ref(kind: RefKind, row_id: int) -> str:
    """Build the ref of a stored row: ``mem:<id>`` or ``ep:<id>`` (spec §2.2, §4.6).

    The kind prefix is mandatory because a memory and an episode must never be confused,
    whatever the id space. Raises ``ValueError`` for an unknown kind or an id that
    :func:`parse_ref` would reject, so every ref this service emits round-trips.
    """
    if kind not in _KINDS or isinstance(row_id, bool) or not 0 < row_id <= MAX_ROW_ID:
        raise ValueError(f"no ref for kind {kind!r} and id {row_id!r}")
    return f"{kind}:{row_id}"


def budget_contents(
    found: Sequence[tuple[str, Row | None]],
    budget_chars: int = GET_CONTENTS_BUDGET_CHARS,
) -> dict[str, object]:
    """Assemble a ``get_contents`` response under its batch budget (spec §4.4).

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
        size = _text_len(item, "content")
        if items and used + size > budget_chars:
            deferred = [later for later, _ in found[position:]]
            return _contents_response(items, missing, deferred, budget_chars)
        used += size
        items.append(dict(item))
    return _contents_response(items, missing, [], budget_chars)


# -- list tools: front-to-back budgets -----------------------------------------------------


def budget_list_memories(
    rows: Sequence[Row],
    preview_chars: int,
    budget_chars: int = LIST_MEMORIES_BUDGET_CHARS,
) -> tuple[list[ShapedRow], bool]:
    """Bound a ``list_memories`` response over ``content`` (spec §4.7, bug-255).

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
    """Bound a ``list_episodes`` response over ``summary`` + ``keywords`` (spec §4.7).

    Both text columns share one budget, because both go through the same write cap and
    budgeting only one would leave half the response unbounded. Each field is trimmed on its
    own (``summary_len``/``summary_truncated``, ``keywords_len``/``keywords_truncated``).
    Degraded rows gain ``ref: "ep:<id>"``. The return value is as for
    :func:`budget_list_memories`.
    """
    return _budget_list(rows, ("summary", "keywords"), "ep", preview_chars, budget_chars)


# -- helpers -------------------------------------------------------------------------------


def _budget_list(
    rows: Sequence[Row],
    fields: tuple[str, ...],
    kind: RefKind,
    preview_chars: int,
    budget_chars: int,
) -> tuple[list[ShapedRow], bool]:
    """Spend a list budget front to back, since listings arrive newest first (§4.7).

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
        size = sum(_text_len(row, field) for field in fields)
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
    ref = _ref_for_id(kind, row.get("id"))
    if ref is None:
        return False
    cut = [_trim(row, field, cap) for field in fields]
    if not any(cut):
        return False
    row["ref"] = ref
    return True


def trimmable(row: Row) -> bool:
    """Whether a recall message may be cut to a preview.

    Rows with a ref (memories, episodes) can be expanded with get_contents. Conversation
    echoes of recall_with_context are trimmed too, uniformly: the seed design says so
    because the caller already holds their full text (CPersona's code leaves them whole;
    the seed wins). The profile row is never trimmed: there is no handle back to it.
    """
    return bool(row.get("ref")) or row.get("context_type") == "conversation"


def _previewed(row: Row, cap: int) -> ShapedRow:
    """Copy a recall message, trimming its content when it is trimmable."""
    shaped = dict(row)
    if trimmable(shaped):
        _trim(shaped, "content", cap)
    return shaped


def _trim(row: ShapedRow, field: str, cap: int) -> bool:
    """Cut ``row[field]`` (a copy we own) to a ``cap``-long prefix with markers.

    Returns whether it was cut. Non-string and short values are left alone, without
    markers.
    """
    value = row.get(field)
    if not isinstance(value, str) or len(value) <= cap:
        return False
    row[field] = value[:cap]
    row[f"{field}_truncated"] = True
    row[f"{field}_len"] = len(value)
    return True


def _text_len(row: Row, field: str) -> int:
    """Length of a text field in code points; a missing or non-string value counts 0."""
    value = row.get(field)
    return len(value) if isinstance(value, str) else 0


def _ref_for_id(kind: RefKind, value: object) -> str | None:
    """The ref of a row whose ``id`` is ``value``, or ``None`` if it is not a valid id."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ROW_ID:
        return None
    return format_ref(kind, value)


def _rows_of(value: object) -> list[Row] | None:
    """``value`` as a list of rows, or ``None`` unless every element is an object."""
    if not isinstance(value, list | tuple):
        return None
    rows: list[Row] = [item for item in value if isinstance(item, Mapping)]
    return rows if len(rows) == len(value) else None


def _contents_response(
    items: list[ShapedRow], missing: list[str], deferred: list[str], budget_chars: int
) -> dict[str, object]:
    """The ``get_contents`` success shape. It has no ``ok``, per spec §1.3."""
    response: dict[str, object] = {"items": items, "missing": missing, "count": len(items)}
    if deferred:
        response["deferred"] = deferred
        response["budget_chars"] = budget_chars
    return response


# -- accounting ------------------------------------------------------------------------------

_ROW_LISTS: Final = ("messages", "memories", "episodes", "items")
_TEXT_FIELDS: Final = ("content", "summary", "keywords")


def char_accounting(body: Mapping[str, object]) -> tuple[int, int]:
    """(characters of row text returned, characters previews and budgets held back).

    Counts the text fields of the rows of a tool answer; a trimmed field contributes
    ``<field>_len`` minus what was sent to the saving. Used for usage statistics.
    """
    returned = saved = 0
    for key in _ROW_LISTS:
        rows = _rows_of(body.get(key))
        for row in rows or ():
            for field in _TEXT_FIELDS:
                sent = _text_len(row, field)
                full = row.get(f"{field}_len")
                returned += sent
                if row.get(f"{field}_truncated") and isinstance(full, int):
                    saved += max(0, full - sent)
    return returned, saved


def shape_listing(
    key: Literal["memories", "episodes"], rows: Sequence[Row], preview_chars: int
) -> dict[str, object]:
    """A list tool's answer ``{<key>: rows, count, budget_chars?}`` under its budget (§4.7)."""
    if key == "memories":
        shaped, trimmed = budget_list_memories(rows, preview_chars)
        budget = LIST_MEMORIES_BUDGET_CHARS
    else:
        shaped, trimmed = budget_list_episodes(rows, preview_chars)
        budget = LIST_EPISODES_BUDGET_CHARS
    body: dict[str, object] = {key: shaped, "count": len(shaped)}
    if trimmed:
        body["budget_chars"] = budget
    return body
