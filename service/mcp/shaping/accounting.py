"""How many characters an answer returned and how many previews and budgets saved."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from service.mcp.shaping.rows import rows_of, text_len

_ROW_LISTS: Final = ("messages", "memories", "episodes", "items")


_TEXT_FIELDS: Final = ("content", "summary", "keywords")


def char_accounting(body: Mapping[str, object]) -> tuple[int, int]:
    """(characters of row text returned, characters previews and budgets held back).

    Counts the text fields of the rows of a tool answer; a trimmed field contributes
    ``<field>_len`` minus what was sent to the saving. Used for usage statistics.
    """
    returned = saved = 0
    for key in _ROW_LISTS:
        rows = rows_of(body.get(key))
        for row in rows or ():
            for field in _TEXT_FIELDS:
                sent = text_len(row, field)
                full = row.get(f"{field}_len")
                returned += sent
                if row.get(f"{field}_truncated") and isinstance(full, int):
                    saved += max(0, full - sent)
    return returned, saved
