"""The token budget of a recall answer (``max_tokens``) and the session ledger's stubs.

Rows are offered best first (the end of a recall list: the best match, or the newest row
of ``recall_with_context``) and admitted while the running total of their tokens stays
within the budget; the first row is always admitted. A row already delivered whole in
this session is replaced by its stub ``{ref, seen: true}`` and costs only that. Rows
without a ref (the profile row, conversation echoes) cannot be resumed or stubbed: they
are charged first and always come along on the first page.

:func:`admitted` is the one rule; ``service/db/sql/ledger.sql`` applies the same rule in
the statement that records what a recall delivered (so the ledger and the answer agree
without a second round trip), and a test holds the two together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from service.mcp.render import recall as render
from service.mcp.shaping.rows import Shaped
from service.mcp.shaping.tokens import TokenCounter, render as text_of
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """One row offered to the budget: its shaped record, its compact wire form (rendered
    once, here, and sent as is), its stub and their token costs."""

    row: Shaped
    wire: JsonObject
    ref: str
    whole: bool  # delivered with its full content (what the ledger records)
    cost: int
    stub_cost: int


def row_cost(row: object, count: TokenCounter) -> int:
    """Tokens a rendered row adds to an answer: its JSON text and the comma after it."""
    return count(text_of(row)) + 1


def offer(row: Shaped, count: TokenCounter) -> Offer:
    """``row`` (which has a ref; ValueError otherwise) as an offer to the budget: rendered
    once, costed from that rendering."""
    ref = row.ref
    if ref is None:
        raise ValueError("only a row with a ref can be offered to the budget")
    wire = render.shaped(row)
    return Offer(
        row, wire, ref, row.whole, row_cost(wire, count), row_cost(render.stub(ref), count)
    )


def admitted(
    costs: Sequence[int], stub_costs: Sequence[int], seen: Collection[int], budget: int | None
) -> int:
    """How many offers (a prefix, best first) the budget admits.

    Offer ``i`` costs ``stub_costs[i]`` when ``i`` is in ``seen``, else ``costs[i]``. The
    first offer is always admitted; a later one only while the running total including it
    stays within ``budget`` (``None``: no budget, every offer is admitted).
    """
    spent = 0
    for position, (cost, stub_cost) in enumerate(zip(costs, stub_costs, strict=True)):
        spent += stub_cost if position in seen else cost
        if position and budget is not None and spent > budget:
            return position
    return len(costs)


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    """What the budget made of the offers: the wire rows to send and their refs (best
    first), the shaped rows sent in full or as previews (not the stubs), the refs left out
    (best first, for the cursor) and the refs sent as stubs."""

    rows: list[JsonObject]
    refs: list[str]
    sent: list[Shaped]
    left_out: list[str]
    stubbed: list[str]
    delivered_whole: list[str]


def page(offers: Sequence[Offer], seen: Collection[int], budget: int | None) -> Page:
    """Apply :func:`admitted` to ``offers`` with the ``seen`` positions stubbed."""
    count = admitted([o.cost for o in offers], [o.stub_cost for o in offers], seen, budget)
    rows: list[JsonObject] = []
    sent: list[Shaped] = []
    stubbed: list[str] = []
    whole: list[str] = []
    for position, item in enumerate(offers[:count]):
        if position in seen:
            rows.append(render.stub(item.ref))
            stubbed.append(item.ref)
        else:
            rows.append(item.wire)
            sent.append(item.row)
            if item.whole:
                whole.append(item.ref)
    refs = [o.ref for o in offers[:count]]
    return Page(rows, refs, sent, [o.ref for o in offers[count:]], stubbed, whole)
