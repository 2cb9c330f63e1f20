"""What a budget's prefix of a reconstruct answer returns (:class:`Cut`) and the reads
of it that the answer's body and its trace share (docs/tools.md, "reconstruct")."""

from __future__ import annotations

import dataclasses

from service.mcp.shaping.reconstruct import quote
from service.mcp.shaping.reconstruct.records import Record
from service.memory.reconstruct.records import Claim, Item


@dataclasses.dataclass(frozen=True, slots=True)
class Shown:
    """One returned item: its head quote, the excerpts the prefix kept, how many it cut,
    and (under a mode's fitting) how many claims the first item keeps (None: all)."""

    item: Item
    head: quote.Quote
    excerpts: tuple[quote.Quote, ...]
    excerpts_omitted: int
    claims: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Sequence:
    """The trace's ``sequence`` of a mode's answer: the payload sequence's name, its
    steps, how many of them the answer's prefix took, and its whole cost in characters."""

    name: str
    steps: int
    taken: int
    chars: int


@dataclasses.dataclass(frozen=True, slots=True)
class Cut:
    """What a budget's prefix returns, and what the envelope reports of it (``sequence``
    only for the "whole" sequence of a mode)."""

    shown: tuple[Shown, ...]
    used: int
    window_cut: bool
    reserved_omitted: int
    breakpoints: tuple[int, ...]
    sequence: Sequence | None = None


def claim_record(claim: Claim) -> Record:
    """The claim's stored text, with its best passage by meaning when recall scored one."""
    found = claim.row.passage
    end = None if found is None else min(found.end, len(claim.row.text))
    if found is None or end is None or found.start >= end:
        return Record(claim.ref, claim.row.text)
    return Record(claim.ref, claim.row.text, (found.start, end, found.cosine))


def kept_refs(shown: Shown) -> frozenset[str] | None:
    """The refs of the claims the item shows: None for all, or (a mode's fitting) its
    first ``claims`` by relevance."""
    if shown.claims is None:
        return None
    return frozenset(claim.ref for claim in shown.item.relevance[: shown.claims])


def shows(kept: frozenset[str] | None, ref: str) -> bool:
    return kept is None or ref in kept
