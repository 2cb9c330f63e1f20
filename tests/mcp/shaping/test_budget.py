"""The token budget (max_tokens) and the ledger's stubs, as pure functions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.render import recall as render_recall
from service.mcp.shaping import budget, tokens
from service.mcp.shaping.rows import Shaped
from tests.mcp.shaping.rows import echo, mem, wire

PROPERTY = settings(database=None, deadline=None, max_examples=200)


def an_offer(i: int, cost: int, shown: int | None = None) -> budget.Offer:
    row = Shaped(mem(i, "xy"), shown)
    return budget.Offer(row, wire(row), f"mem:{i}", shown is None, cost, 5)


def offers(*costs: int) -> list[budget.Offer]:
    return [an_offer(i + 1, cost) for i, cost in enumerate(costs)]


def test_rows_are_admitted_best_first_until_the_budget_is_spent() -> None:
    assert budget.admitted([100, 100, 100], [5, 5, 5], set(), 250) == 2
    assert budget.admitted([100, 100, 100], [5, 5, 5], set(), 300) == 3


def test_the_first_row_is_admitted_whatever_its_cost_or_the_budget() -> None:
    assert budget.admitted([900, 1], [5, 5], set(), 100) == 1
    assert budget.admitted([10], [5], set(), -50) == 1


def test_a_row_that_does_not_fit_ends_the_page_even_if_a_later_one_would() -> None:
    assert budget.admitted([50, 500, 10], [5, 5, 5], set(), 100) == 1


def test_held_rows_cost_only_their_stub() -> None:
    assert budget.admitted([100, 100, 100], [5, 5, 5], {0, 1}, 120) == 3


def test_no_budget_admits_everything() -> None:
    assert budget.admitted([10**6] * 4, [5] * 4, set(), None) == 4


def test_a_page_stubs_held_rows_and_names_what_it_left_out_and_sent_whole() -> None:
    items = offers(40, 40, 40, 40)
    items[2] = an_offer(3, 40, shown=1)
    page = budget.page(items, {1}, 90)
    assert page.rows == [items[0].wire, {"ref": "mem:2", "seen": True}, items[2].wire]
    assert page.rows[0] is items[0].wire  # the offer's rendering is sent, not a new one
    assert page.refs == ["mem:1", "mem:2", "mem:3"]
    assert page.sent == [items[0].row, items[2].row]
    assert page.left_out == ["mem:4"]
    assert page.stubbed == ["mem:2"]
    assert page.delivered_whole == ["mem:1"]  # mem:3 was a preview


def test_a_row_costs_its_compact_rendering_in_tokens_plus_a_comma() -> None:
    row = {"ref": "mem:1", "content": "abcd" * 10}
    assert tokens.render(row) == '{"ref":"mem:1","content":"' + "abcd" * 10 + '"}'
    assert budget.row_cost(row, tokens.chars4) == -(-len(tokens.render(row)) // 4) + 1
    assert budget.row_cost(render_recall.stub("mem:1"), tokens.chars4) == 8


def test_an_offer_is_rendered_once_and_costed_from_that_rendering() -> None:
    shaped = Shaped(mem(7, "abcd" * 10), 8)
    item = budget.offer(shaped, tokens.chars4)
    assert item.row is shaped
    assert item.wire == {"content": "abcdabcd", "ref": "mem:7", "content_truncated": True,
                         "content_len": 40}  # fmt: skip
    assert item.ref == "mem:7"
    assert item.whole is False
    assert item.cost == budget.row_cost(item.wire, tokens.chars4)
    assert item.stub_cost == budget.row_cost({"ref": "mem:7", "seen": True}, tokens.chars4)
    assert budget.offer(Shaped(mem(7, "x")), tokens.chars4).whole is True


def test_a_row_without_a_ref_cannot_be_offered() -> None:
    with pytest.raises(ValueError, match="ref"):
        budget.offer(Shaped(echo("hello")), tokens.chars4)


@PROPERTY
@given(
    costs=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=30),
    held=st.sets(st.integers(min_value=0, max_value=29)),
    room=st.one_of(st.none(), st.integers(min_value=-10, max_value=2000)),
)
def test_a_page_is_a_prefix_within_budget_unless_it_is_the_single_best_row(
    costs: list[int], held: set[int], room: int | None
) -> None:
    stub_costs = [5] * len(costs)
    count = budget.admitted(costs, stub_costs, held, room)
    assert 1 <= count <= len(costs)
    spent = [stub_costs[i] if i in held else costs[i] for i in range(count)]
    if room is not None and count > 1:
        assert sum(spent) <= room
    if room is not None and count < len(costs):
        nxt = stub_costs[count] if count in held else costs[count]
        assert sum(spent) + nxt > room
