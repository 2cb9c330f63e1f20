"""Compact recall rows: the same fields and meanings, without the framing that repeats itself.

A default recall row used to spend as much on framing as on memory text: an empty
``source``, scores printed with 17 significant digits, and ``match_reason.score`` printed
twice (as ``score`` and again as the signal it came from). The compact form keeps every
field name and meaning of CPersona's row (docs/tools.md, "Recall rows"), so a client that parses
today's rows parses these, and drops only what carries no information:

* floats of ``match_reason`` are rounded to 4 significant digits (ranking is the list
  order; four digits keep every visible difference of a score);
* the raw signal equal to ``score`` is not repeated (``signal: "rrf"`` already says
  ``score`` is the rrf value), nor a ``match_reason.cosine`` equal to ``confidence.cosine``;
* empty values (``""``, ``null``, ``{}``, ``[]``) are omitted, inside ``source`` too, and a
  ``source`` that says nothing (``{}``, or an episode's fixed ``{"System": "episode"}``,
  which its ``ep:`` ref already says) is omitted with it;
* ``content`` and ``timestamp`` are kept exactly as given: ``content`` is the pure-prefix
  preview the seed's ``exclude_contents`` contract rests on.

These are the value rules; ``service.mcp.render.recall.shaped`` applies them while it
renders a shaped row, so the compact row is the only dict a row becomes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

SIGNIFICANT_DIGITS: Final = 4
EPISODE_SOURCE: Final[Mapping[str, object]] = {"System": "episode"}


def round_significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (0, inf and nan unchanged)."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def empty(value: object) -> bool:
    """Whether a field value says nothing: ``None``, ``""``, ``{}`` or ``[]``."""
    return value is None or (isinstance(value, str | dict | list | tuple) and not value)


def compact_reason(reason: Mapping[str, object], cosine: float | None = None) -> dict[str, object]:
    """``match_reason`` with rounded floats and no value printed twice (``cosine``: the
    row's ``confidence.cosine``, when it carries one)."""
    out = {
        key: round_significant(value) if isinstance(value, float) else value
        for key, value in reason.items()
    }
    signal = out.get("signal")
    if isinstance(signal, str) and signal != "score" and out.get(signal) == out.get("score"):
        out.pop(signal, None)
    if cosine is not None and out.get("cosine") == round_significant(cosine):
        del out["cosine"]
    return out


def compact_source(source: object, ref: object) -> object | None:
    """``source`` without empty fields; ``None`` when it says nothing (then it is omitted)."""
    if not isinstance(source, Mapping):
        return None if empty(source) else source
    kept = {key: value for key, value in source.items() if not empty(value)}
    if not kept:
        return None
    if isinstance(ref, str) and ref.startswith("ep:") and kept == EPISODE_SOURCE:
        return None
    return kept
