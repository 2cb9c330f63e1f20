"""What every budget shares: row types, refs, and trimming one field to its preview."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

from service.memory.contents import MAX_ROW_ID

Row: TypeAlias = Mapping[str, object]
"""A JSON-ready row as the library or the storage layer produced it."""


ShapedRow: TypeAlias = dict[str, object]
"""A new row built by this module; the caller owns it."""


RefKind: TypeAlias = Literal["mem", "ep"]


_KINDS: Final[Mapping[str, RefKind]] = {"mem": "mem", "ep": "ep"}


def format_ref(kind: RefKind, row_id: int) -> str:
    """Build the ref of a stored row: ``mem:<id>`` or ``ep:<id>`` (docs/tools.md, "Recall rows";
    docs/tools.md, "Refs").

    The kind prefix is mandatory because a memory and an episode must never be confused,
    whatever the id space. Raises ``ValueError`` for an unknown kind or an id that
    :func:`parse_ref` would reject, so every ref this service emits round-trips.
    """
    if kind not in _KINDS or isinstance(row_id, bool) or not 0 < row_id <= MAX_ROW_ID:
        raise ValueError(f"no ref for kind {kind!r} and id {row_id!r}")
    return f"{kind}:{row_id}"


def trimmable(row: Row) -> bool:
    """Whether a recall message may be cut to a preview.

    Rows with a ref (memories, episodes) can be expanded with get_contents. Conversation
    echoes of recall_with_context are trimmed too, uniformly: the seed design says so
    because the caller already holds their full text (CPersona's code leaves them whole;
    the seed wins). The profile row is never trimmed: there is no handle back to it.
    """
    return bool(row.get("ref")) or row.get("context_type") == "conversation"


def previewed(row: Row, cap: int) -> ShapedRow:
    """Copy a recall message, trimming its content when it is trimmable."""
    shaped = dict(row)
    if trimmable(shaped):
        trim(shaped, "content", cap)
    return shaped


def trim(row: ShapedRow, field: str, cap: int) -> bool:
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


def text_len(row: Row, field: str) -> int:
    """Length of a text field in code points; a missing or non-string value counts 0."""
    value = row.get(field)
    return len(value) if isinstance(value, str) else 0


def ref_for_id(kind: RefKind, value: object) -> str | None:
    """The ref of a row whose ``id`` is ``value``, or ``None`` if it is not a valid id."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ROW_ID:
        return None
    return format_ref(kind, value)


def rows_of(value: object) -> list[Row] | None:
    """``value`` as a list of rows, or ``None`` unless every element is an object."""
    if not isinstance(value, list | tuple):
        return None
    rows: list[Row] = [item for item in value if isinstance(item, Mapping)]
    return rows if len(rows) == len(value) else None
