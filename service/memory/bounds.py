"""Input bounds: one documented cap per kind of free-text input (docs/reliability.md,
"Input bounds (hardening round two)").

Every string and list a tool takes is bounded twice: in the advertised JSON Schema
(``maxLength`` / ``maxItems``, checked by the MCP boundary before anything runs) and
here, by the library, which trusts no boundary. The caps are per kind, not per tool,
so an agent learns one number per kind. Write texts (memory content, episode summaries,
profiles) keep the spec's behaviour: they are truncated at their setting
(``CPERSONA_MAX_CONTENT_LENGTH``, ``CPERSONA_MAX_PROFILE_LENGTH``), never refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from service.errors import InvalidInput

QUERY_CHARS: Final = 16_000
"""A recall query, an excluded text, a turn of ``external_context``: the write cap
(``CPERSONA_MAX_CONTENT_LENGTH``'s default), so any stored row can be searched for by its
whole content (the exact-content lookup), and no more: a query is one search, not a
document. The embedding model sees at most its own window of it."""
IDENTIFIER_CHARS: Final = 256
"""Agent, project, channel and source names (``CPERSONA`` axis names, fixed)."""
NAME_CHARS: Final = 256
"""Short words and names: a section, a precision, a strategy, a check, a file name."""
MSG_ID_CHARS: Final = 512
"""A stored message's ``id`` (its dedup key; ``max_msg_id_length``)."""
HISTORY_ITEMS: Final = 10_000
"""Turns of an archived session's ``history`` (only their timestamps are read: the span)."""
LIST_ITEMS: Final = 100
"""Items of a list argument (excluded texts, turns, checks): the ``limit`` of a recall."""


def too_long(field: str, length: int, cap: int, unit: str = "characters") -> str:
    """The one message of every bound, at the boundary and in the library."""
    return f"{field} is too long ({length} {unit}, max {cap})"


def check_text(field: str, value: object, cap: int) -> None:
    """Raise InvalidInput when ``value`` is a string longer than ``cap`` characters."""
    if isinstance(value, str) and len(value) > cap:
        raise InvalidInput(too_long(field, len(value), cap))


def check_list(field: str, values: Sequence[object], cap: int = LIST_ITEMS) -> None:
    """Raise InvalidInput when ``values`` has more than ``cap`` items."""
    if len(values) > cap:
        raise InvalidInput(too_long(field, len(values), cap, "items"))


def check_texts(field: str, values: Sequence[object], cap: int) -> None:
    """Bound a list of strings: its items, then each string (``field/<index>``)."""
    check_list(field, values)
    for index, value in enumerate(values):
        check_text(f"{field}/{index}", value, cap)
