"""reconstruct's payload sequences, their cut to a budget, and shortfall_reason."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.shaping.reconstruct import allocate, budget, quote
from service.mcp.shaping.reconstruct.budget import QuoteSettings
from service.mcp.shaping.reconstruct.quote import Passages
from service.mcp.shaping.reconstruct.records import Record
from tests.mcp.shaping.reconstruct.test_quote import long_record

PROPERTY = settings(database=None, deadline=None, max_examples=200)


def test_acceptance_21_budget_900_over_two_long_records_returns_one_item() -> None:
    text, _, _ = long_record()
    records = [Record("mem:1", text), Record("mem:2", text.replace("Pixel", "Pixie"))]
    spent = budget.resolve(900, 10, QuoteSettings())
    assert spent.effective == 900
    heads = [
        budget.head_quote(r, "greyhound derby", p, QuoteSettings()) for p, r in enumerate(records)
    ]
    steps = allocate.items_sequence([len(h.content) for h in heads], [[], []])
    cut = allocate.cut(steps, spent.effective, [False, False])
    assert [t.item for t in cut.items] == [0]
    assert cut.used <= 900
    assert cut.window_cut
    reason = allocate.shortfall_reason(
        10, 1, candidates=True, gate_fallback=False, window_cut=cut.window_cut
    )
    assert reason == "budget_exhausted"
    assert budget.shows_usage(reason == "budget_exhausted", cut.reserved_omitted, 0)


def test_acceptance_7_budget_10_still_returns_the_first_item() -> None:
    text, _, _ = long_record()
    spent = budget.resolve(10, 10, QuoteSettings())
    assert spent.effective == 800
    head = budget.head_quote(Record("mem:1", text), "greyhound", 0, QuoteSettings())
    cut = allocate.cut(allocate.items_sequence([len(head.content)], [[]]), spent.effective, [False])
    assert [t.item for t in cut.items] == [0]
    assert cut.used <= 800


def test_the_items_sequence_is_heads_then_excerpt_rounds() -> None:
    steps = allocate.items_sequence([10, 20], [[1, 2], [3]])
    assert [(s.item, s.passage, s.excerpt) for s in steps] == [
        (0, 0, None), (1, 0, None), (0, None, 0), (1, None, 0), (0, None, 1),
    ]  # fmt: skip
    cut = allocate.cut(steps, 34, [False, False])
    assert cut.items == (
        allocate.Taken(0, (0,), 1, 1),
        allocate.Taken(1, (0,), 1, 0),
    )
    assert cut.used == 34
    assert cut.breakpoints == (10, 30, 31, 34, 36)


def test_the_first_head_is_always_admitted_and_a_missing_head_drops_its_item() -> None:
    cut = allocate.cut(allocate.items_sequence([900, 10], [[5], []]), 800, [False, False])
    assert [t.item for t in cut.items] == [0]
    assert cut.items[0].excerpts_omitted == 1
    assert cut.window_cut


def test_held_items_are_cut_first_and_counted_as_reserved_omitted() -> None:
    cut = allocate.cut(
        allocate.items_sequence([100, 100, 100], [[], [], []]), 200, [False, False, True]
    )
    assert [t.item for t in cut.items] == [0, 1]
    assert cut.reserved_omitted == 1
    assert not cut.window_cut
    with pytest.raises(ValueError, match="held"):
        allocate.cut(allocate.items_sequence([1, 1], [[], []]), 10, [True, False])


def test_the_whole_sequence_puts_whole_records_first_then_fused_passages() -> None:
    text, first, _ = long_record()
    divided = [
        quote.passages(Record("mem:1", text), "greyhound Pixel derby"),
        quote.passages(Record("mem:2", "A short record."), "greyhound"),
    ]
    steps = allocate.whole_sequence(divided, [[7], []], [False, False])
    assert (steps[0].item, steps[0].passage) == (1, 0)  # the short record, shown whole
    assert (steps[1].item, steps[1].passage) == (0, 0)  # then the long record's best passage
    assert steps[-1].excerpt == 0
    cut = allocate.cut(steps, len("A short record.") + 10, [False, False])
    taken = {t.item: t.passages for t in cut.items}
    assert taken == {1: (0,)}  # the long record's first passage does not fit
    full = allocate.cut(steps, 10**6, [False, False])
    shown = quote.passage_quote(divided[0], full.items[0].passages)
    assert first in shown.content
    assert len(shown.content) == sum(s.cost for s in steps if s.item == 0 and s.excerpt is None)


def test_pro_limits_the_whole_floor_and_moves_long_held_passages_last() -> None:
    text = "Filler sentence here. " * 400  # 8,800 characters
    long_held = quote.passages(Record("mem:99", text), "filler")
    shorts = [Passages(Record(f"mem:{n}", "s"), "whole", (quote.Passage(0, 1),)) for n in range(11)]
    records = [*shorts, long_held]
    held = [False] * 11 + [True]
    steps = allocate.whole_sequence(records, [[]] * 12, held, pro=True)
    order = [(s.item, s.passage) for s in steps]
    assert order[:10] == [(n, 0) for n in range(10)]  # the floor: 10 items under pro
    later = [k for k, (item, _) in enumerate(order) if item == 11][1:]
    assert later == list(range(len(order) - len(later), len(order)))
    plain = allocate.whole_sequence(records, [[]] * 12, held)
    assert [(s.item, s.passage) for s in plain][:11] == [(n, 0) for n in range(11)]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((0, 0, True, False, False), "count_zero"),
        ((10, 0, False, False, False), "no_relevant_evidence"),
        ((10, 0, False, True, False), "below_quality_threshold"),
        ((10, 2, True, True, False), "below_quality_threshold"),
        ((10, 2, True, False, True), "budget_exhausted"),
        ((10, 2, True, False, False), "exhausted_candidates"),
        ((2, 2, True, False, False), None),
    ],
)
def test_shortfall_reason(args: tuple[int, int, bool, bool, bool], expected: str | None) -> None:
    count, returned, candidates, fallback, window_cut = args
    found = allocate.shortfall_reason(
        count, returned, candidates=candidates, gate_fallback=fallback, window_cut=window_cut
    )
    assert found == expected


COSTS = st.lists(
    st.tuples(st.integers(1, 900), st.lists(st.integers(1, 500), max_size=4)),
    min_size=1,
    max_size=8,
)


def _holdings(cut: allocate.Allocation) -> dict[int, tuple[set[int], int]]:
    return {t.item: (set(t.passages), t.excerpts) for t in cut.items}


def _contains(small: allocate.Allocation, large: allocate.Allocation) -> bool:
    big = _holdings(large)
    return all(
        item in big and passages <= big[item][0] and excerpts <= big[item][1]
        for item, (passages, excerpts) in _holdings(small).items()
    )


@PROPERTY
@given(
    costs=COSTS,
    held=st.integers(0, 3),
    budgets=st.lists(st.integers(1, 8000), min_size=2, max_size=2),
)
def test_a_larger_budget_never_removes_an_item_or_excerpt_items_sequence(
    costs: list[tuple[int, list[int]]], held: int, budgets: list[int]
) -> None:
    flags = [i >= len(costs) - held for i in range(len(costs))]
    steps = allocate.items_sequence([h for h, _ in costs], [e for _, e in costs])
    low, high = sorted(budgets)
    small, large = allocate.cut(steps, low, flags), allocate.cut(steps, high, flags)
    assert _contains(small, large)
    assert small.used <= max(low, steps[0].cost)


WORDS = st.sampled_from(
    ["Pixel won. ", "The derby ran. ", "However, rain. ", "\n\n", "a" * 300 + ". "]
)


@PROPERTY
@given(
    texts=st.lists(st.lists(WORDS, max_size=30).map("".join), min_size=1, max_size=5),
    budgets=st.lists(st.integers(1, 6000), min_size=2, max_size=2),
    pro=st.booleans(),
)
def test_a_larger_budget_never_removes_an_item_or_excerpt_whole_sequence(
    texts: list[str], budgets: list[int], pro: bool
) -> None:
    records = [quote.passages(Record(f"mem:{n}", t), "Pixel derby") for n, t in enumerate(texts)]
    flags = [n == len(texts) - 1 and n > 0 for n in range(len(texts))]
    steps = allocate.whole_sequence(records, [[50, 60]] * len(texts), flags, pro=pro)
    low, high = sorted(budgets)
    small, large = allocate.cut(steps, low, flags), allocate.cut(steps, high, flags)
    assert _contains(small, large)
    for taken in large.items:
        shown = quote.passage_quote(records[taken.item], taken.passages)
        cost = sum(s.cost for s in steps[: len(large.breakpoints)] if s.item == taken.item)
        assert len(shown.content) <= cost


@PROPERTY
@given(costs=COSTS, held=st.integers(0, 3), budget_chars=st.integers(1, 8000))
def test_the_lazy_items_cut_is_the_items_cut_and_asks_only_for_reached_excerpts(
    costs: list[tuple[int, list[int]]], held: int, budget_chars: int
) -> None:
    flags = [i >= len(costs) - held for i in range(len(costs))]
    heads, excerpts = [h for h, _ in costs], [e for _, e in costs]
    eager = allocate.cut(allocate.items_sequence(heads, excerpts), budget_chars, flags)
    asked: list[tuple[int, int]] = []

    def cost(item: int, r: int) -> int:
        asked.append((item, r))
        return excerpts[item][r]

    lazy = allocate.cut_items_lazily(heads, [len(e) for e in excerpts], cost, budget_chars, flags)
    assert (lazy.items, lazy.used, lazy.window_cut, lazy.reserved_omitted) == (
        eager.items,
        eager.used,
        eager.window_cut,
        eager.reserved_omitted,
    )
    assert lazy.breakpoints == eager.breakpoints[: len(lazy.breakpoints)]
    reached = sum(t.excerpts for t in lazy.items)
    assert len(asked) <= reached + 1
