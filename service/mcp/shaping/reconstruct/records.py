"""The input records ``reconstruct``'s quoting, budget and allocation work on.

The library (``service.memory.reconstruct``) decides items, heads and claims; the tool maps
each item onto an :class:`Item` and hands it here. Nothing in this package reads the
database: a :class:`Record` carries the one stored text a quote is measured in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

EPISODE_LABEL: Final = "[Episode] "
"""How recall shows an episode's summary; offsets into an episode count without it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Record:
    """One record to quote: its ``ref`` (``mem:N`` or ``ep:N``) and its **stored** text.

    For an episode the text is the summary as stored, without the ``[Episode] `` label
    recall puts in front (build it with :meth:`shown` from a recall row's content), so
    every range and ``expand`` span is an offset ``get_contents`` can serve. ``part``
    may put the blocks it overlaps first (:meth:`overlapping`).
    """

    ref: str
    text: str
    part: tuple[int, int, float] | None = None
    """``[start, end)`` of the passage that matched the query best by meaning, and its
    cosine (docs/architecture.md, "Passages"); None: none."""

    @property
    def episode(self) -> bool:
        return self.ref.startswith("ep:")

    def overlapping(self, spans: Sequence[tuple[int, int]]) -> list[int]:
        """The indices of the blocks of ``spans`` that overlap the passage (none without)."""
        if self.part is None:
            return []
        start, end, _ = self.part
        return [i for i, (s, e) in enumerate(spans) if s < end and start < e]

    @classmethod
    def shown(cls, ref: str, content: str) -> Record:
        """The record from the text a recall row shows (an episode's label removed)."""
        if ref.startswith("ep:") and content.startswith(EPISODE_LABEL):
            return cls(ref, content[len(EPISODE_LABEL) :])
        return cls(ref, content)


@dataclasses.dataclass(frozen=True, slots=True)
class Item:
    """One item, as allocation needs it.

    ``head`` is the head claim's record, quoted as the item's ``content``. ``others`` are
    the item's other retained claims in **relevance** order (the order their excerpts take
    in the payload sequence; the claims list itself is ordered newest first elsewhere).
    ``held`` marks an item admitted by a reservation (``admission: "reservation"``); held
    items must follow every window item, so the budget cuts them first.
    """

    head: Record
    others: tuple[Record, ...] = ()
    held: bool = False
