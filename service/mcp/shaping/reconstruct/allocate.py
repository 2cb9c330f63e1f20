"""The payload sequence cut to a budget, and why fewer window items came back.

The answer is always the **longest prefix** of one fixed sequence of steps whose costs
(characters added, separators included) fit the budget; the first step is always taken.
Raising the budget therefore never removes an item or an excerpt
(docs/tools.md, "reconstruct: allocation").

* ``"items"`` sequence (the default): every head quote in item order, then every item's
  first excerpt in item order, then every second excerpt, and so on. An item whose head
  is outside the prefix is not returned; an excerpt outside it is counted in the item's
  ``excerpts_omitted`` (its claim stays).
* ``"whole"`` sequence (the modes): each head record's passages (``quote.passages``);
  first the records quoted whole, in item order (under pro only the first 10 items join
  this floor), then every passage of the longer records in a fused cross-record order
  (reciprocal rank, k = 60, of the item position and the passage's rank in its record),
  then the excerpts as above. Under pro, a held item whose record is longer than 6,000
  characters keeps only its first passage in place; its later passages go last. An item
  with no passage in the prefix is not returned.

Held items must come after every window item (they are cut first); the ones the budget
drops are ``reserved_omitted``, and only a dropped **window** item makes the shortfall
``budget_exhausted``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Final, Literal

from service.mcp.shaping.reconstruct import divide
from service.mcp.shaping.reconstruct.quote import SEPARATOR, Passages

Shortfall = Literal[
    "count_zero",
    "no_relevant_evidence",
    "below_quality_threshold",
    "budget_exhausted",
    "exhausted_candidates",
]
PRO_WHOLE_FLOOR_ITEMS: Final = 10
PRO_HELD_LONG_RECORD_CHARS: Final = 6000


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """One step of a payload sequence: a head (``passage`` 0 in the items sequence), a
    passage of item ``item``'s head record, or its excerpt ``excerpt``; ``cost`` is the
    characters it adds."""

    item: int
    cost: int
    passage: int | None = None
    excerpt: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Taken:
    """What one returned item carries: its head passages (indices, in the order taken;
    ``(0,)`` in the items sequence) and its first ``excerpts`` excerpts;
    ``excerpts_omitted`` is how many the budget dropped."""

    item: int
    passages: tuple[int, ...]
    excerpts: int
    excerpts_omitted: int


@dataclasses.dataclass(frozen=True, slots=True)
class Allocation:
    """The prefix of a sequence: the returned items in item order, the characters used,
    ``window_cut`` (a window item was dropped), ``reserved_omitted`` (held items dropped)
    and ``breakpoints``, the running total after each step of the whole sequence (a
    budget equal to one of them ends the prefix there)."""

    items: tuple[Taken, ...]
    used: int
    window_cut: bool
    reserved_omitted: int
    breakpoints: tuple[int, ...]


def _check_held_last(held: Sequence[bool]) -> None:
    if any(held[i] and not held[i + 1] for i in range(len(held) - 1)):
        raise ValueError("held items must follow every window item")


def excerpt_steps(excerpt_costs: Sequence[Sequence[int]]) -> list[Step]:
    """Every item's first excerpt in item order, then every second one, and so on."""
    rounds = max((len(costs) for costs in excerpt_costs), default=0)
    return [
        Step(item, costs[r], excerpt=r)
        for r in range(rounds)
        for item, costs in enumerate(excerpt_costs)
        if r < len(costs)
    ]


def items_sequence(head_costs: Sequence[int], excerpt_costs: Sequence[Sequence[int]]) -> list[Step]:
    """The ``"items"`` sequence of items with these head and excerpt costs."""
    heads = [Step(item, cost, passage=0) for item, cost in enumerate(head_costs)]
    return heads + excerpt_steps(excerpt_costs)


def _fused_order(records: Sequence[Passages]) -> list[tuple[int, int]]:
    """Every ``(item, passage)`` by reciprocal-rank fusion of the item position (items
    share a rank with their passages) and the passage's rank in its record; ties to the
    earlier item, then the earlier text."""
    flat = [(i, j) for i, record in enumerate(records) for j in range(len(record.passages))]
    k = divide.RRF_K

    def fused(entry: tuple[int, int]) -> float:
        return math.fsum((1.0 / (k + 1 + entry[0]), 1.0 / (k + 1 + entry[1])))

    return sorted(flat, key=lambda e: (-fused(e), e[0], records[e[0]].passages[e[1]].start))


def _passage_costs(order: Sequence[tuple[int, int]], records: Sequence[Passages]) -> list[int]:
    """What each passage adds to its record's shown quote, separators included: a new
    range merges with the shown runs it touches, else it costs one more separator."""
    runs: dict[int, tuple[dict[int, int], dict[int, int]]] = {}  # item: (end->start, start->end)
    costs = []
    for item, j in order:
        passage = records[item].passages[j]
        by_end, by_start = runs.setdefault(item, ({}, {}))
        before = len(by_start)
        low, high = passage.start, passage.end
        if (left := by_end.pop(low, None)) is not None:
            del by_start[left]
            low = left
        if (right := by_start.pop(high, None)) is not None:
            del by_end[right]
            high = right
        by_start[low], by_end[high] = high, low
        separators = max(0, len(by_start) - 1) - max(0, before - 1)
        costs.append(passage.end - passage.start + len(SEPARATOR) * separators)
    return costs


def whole_sequence(
    records: Sequence[Passages],
    excerpt_costs: Sequence[Sequence[int]],
    held: Sequence[bool],
    pro: bool = False,
) -> list[Step]:
    """The ``"whole"`` sequence (see the module docstring) of these head records."""
    floor_items = PRO_WHOLE_FLOOR_ITEMS if pro else len(records)
    whole = [r.basis == "whole" and i < floor_items for i, r in enumerate(records)]
    fused = _fused_order(records)
    order = sorted((e for e in fused if whole[e[0]]), key=lambda e: e[0])
    order += [e for e in fused if not whole[e[0]]]
    if pro:
        order = _held_long_last(order, records, held)
    costs = _passage_costs(order, records)
    steps = [Step(i, cost, passage=j) for (i, j), cost in zip(order, costs, strict=True)]
    return steps + excerpt_steps(excerpt_costs)


def _held_long_last(
    order: list[tuple[int, int]], records: Sequence[Passages], held: Sequence[bool]
) -> list[tuple[int, int]]:
    """Pro: a held item's record longer than 6,000 characters keeps its first passage in
    ``order`` in place; its later passages move to the end, in their order."""
    seen: set[int] = set()
    later: set[int] = set()
    for position, (item, _) in enumerate(order):
        if held[item] and len(records[item].record.text) > PRO_HELD_LONG_RECORD_CHARS:
            if item in seen:
                later.add(position)
            seen.add(item)
    kept = [e for p, e in enumerate(order) if p not in later]
    return kept + [e for p, e in enumerate(order) if p in later]


def cut(steps: Sequence[Step], budget: int, held: Sequence[bool]) -> Allocation:
    """The longest prefix of ``steps`` whose costs fit ``budget`` (the first step always),
    as the items it returns. ``held`` flags each item (held items last)."""
    _check_held_last(held)
    breakpoints: list[int] = []
    for step in steps:
        breakpoints.append((breakpoints[-1] if breakpoints else 0) + step.cost)
    taken = 0
    while taken < len(steps) and (taken == 0 or breakpoints[taken] <= budget):
        taken += 1
    passages: dict[int, list[int]] = {}
    excerpts: dict[int, int] = {}
    offered: dict[int, int] = {}
    for position, step in enumerate(steps):
        if step.excerpt is not None:
            offered[step.item] = offered.get(step.item, 0) + 1
        if position >= taken:
            continue
        if step.passage is not None:
            passages.setdefault(step.item, []).append(step.passage)
        if step.excerpt is not None:
            excerpts[step.item] = excerpts.get(step.item, 0) + 1
    returned = sorted(passages)
    items = tuple(
        Taken(
            item,
            tuple(passages[item]),
            excerpts.get(item, 0),
            offered.get(item, 0) - excerpts.get(item, 0),
        )
        for item in returned
    )
    dropped = set(range(len(held))) - set(returned)
    return Allocation(
        items,
        breakpoints[taken - 1] if taken else 0,
        window_cut=any(not held[i] for i in dropped),
        reserved_omitted=sum(1 for i in dropped if held[i]),
        breakpoints=tuple(breakpoints),
    )


def cut_items_lazily(
    head_costs: Sequence[int],
    excerpt_counts: Sequence[int],
    excerpt_cost: Callable[[int, int], int],
    budget: int,
    held: Sequence[bool],
) -> Allocation:
    """``cut(items_sequence(...), budget, held)`` that asks ``excerpt_cost(item, r)`` (the
    length of item ``item``'s ``r``-th excerpt) only for the excerpts the prefix reaches:
    the step that does not fit ends the walk, so a call divides at most a budget's worth
    of long records for its excerpts, whatever ``max_evidence`` retained. The result is
    the same, except that ``breakpoints`` stop at the first step outside the prefix."""
    _check_held_last(held)
    used, breakpoints, stopped = 0, [], False
    heads = 0
    for item, cost in enumerate(head_costs):
        if item and used + cost > budget:
            breakpoints.append(used + cost)
            stopped = True
            break
        used += cost
        breakpoints.append(used)
        heads += 1
    taken = [0] * heads
    rounds = max(excerpt_counts[:heads], default=0)
    for r in range(rounds):
        for item in range(heads):
            if stopped or r >= excerpt_counts[item]:
                continue
            cost = excerpt_cost(item, r)
            breakpoints.append(used + cost)
            if used + cost > budget:
                stopped = True
                continue
            used += cost
            taken[item] += 1
    items = tuple(
        Taken(item, (0,), taken[item], excerpt_counts[item] - taken[item]) for item in range(heads)
    )
    dropped = range(heads, len(head_costs))
    return Allocation(
        items,
        used,
        window_cut=any(not held[i] for i in dropped),
        reserved_omitted=sum(1 for i in dropped if held[i]),
        breakpoints=tuple(breakpoints),
    )


def shortfall_reason(
    effective_count: int,
    window_returned: int,
    *,
    candidates: bool,
    gate_fallback: bool,
    window_cut: bool,
) -> Shortfall | None:
    """Why fewer window items than ``effective_count`` came back (None: not fewer).

    ``window_returned`` counts returned items that are not held; ``candidates`` says the
    candidate recall produced a usable candidate; ``gate_fallback`` that it reported one;
    ``window_cut`` that the budget dropped a window item (``Allocation.window_cut``)."""
    if effective_count <= 0:
        return "count_zero"
    if not candidates:
        return "below_quality_threshold" if gate_fallback else "no_relevant_evidence"
    if window_returned >= effective_count:
        return None
    if window_cut:
        return "budget_exhausted"
    return "below_quality_threshold" if gate_fallback else "exhausted_candidates"
