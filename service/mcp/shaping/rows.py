"""What every budget shares: row types, refs, and the preview cut of a recall row."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final, Literal, TypeAlias

from service.mcp.shaping.excerpt import Excerpt
from service.memory.contents import MAX_ROW_ID, EpisodeItem, MemoryItem
from service.memory.recall.records import Echo, Recalled

Row: TypeAlias = Mapping[str, object]
"""A JSON-ready row (a rendered tool answer's row, as usage accounting reads it)."""


RecallRow: TypeAlias = Recalled | Echo | MemoryItem | EpisodeItem
"""A row a recall answer can carry: ranked, echoed, or resumed from a cursor by ref."""


@dataclasses.dataclass(frozen=True, slots=True)
class Shaped:
    """One recall row as shaping leaves it: the library's record (always whole), where its
    ``content`` is cut and its excerpt. ``service.mcp.render.recall.shaped`` renders it
    into the compact wire row; nothing is copied until then.

    ``shown`` is the number of code points of ``content`` sent when the row was cut to its
    preview (a pure prefix), None when it goes whole; ``excerpt`` is the passage of the
    full text a cut row also carries (docs/tools.md, "Preview tier")."""

    row: RecallRow
    shown: int | None = None
    excerpt: Excerpt | None = None

    @property
    def ref(self) -> str | None:
        """The row's ref, None for the profile row and conversation echoes."""
        return ref_of(self.row)

    @property
    def whole(self) -> bool:
        """Whether the row's full content is sent (what the ledger records)."""
        return self.shown is None

    @property
    def content(self) -> str:
        """The content sent: the full text, or its preview."""
        text = self.row.content
        return text if self.shown is None else text[: self.shown]


def ref_of(row: RecallRow) -> str | None:
    """The ref of a recall row (None, never ``""``, when it has none)."""
    if isinstance(row, Echo):
        return None
    return row.ref or None


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


def trimmable(row: RecallRow) -> bool:
    """Whether a recall message may be cut to a preview.

    Rows with a ref (memories, episodes) can be expanded with get_contents. Conversation
    echoes of recall_with_context are trimmed too, uniformly: the seed design says so
    because the caller already holds their full text (CPersona's code leaves them whole;
    the seed wins). The profile row is never trimmed: there is no handle back to it.
    """
    return isinstance(row, Echo) or ref_of(row) is not None


def previewed(row: RecallRow, cap: int) -> Shaped:
    """A recall message cut to its first ``cap`` code points when it is trimmable and
    longer than that; else whole."""
    if cap > 0 and len(row.content) > cap and trimmable(row):
        return Shaped(row, cap)
    return Shaped(row)


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
