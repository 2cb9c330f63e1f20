"""reconstruct's quotes and budget fields on the wire: keys, order, compact and trace."""

from __future__ import annotations

from service.mcp.render import quotes
from service.mcp.shaping.reconstruct import budget, quote
from service.mcp.shaping.reconstruct.budget import QuoteSettings
from service.mcp.shaping.reconstruct.records import Record
from tests.mcp.shaping.reconstruct.test_quote import long_record


def test_a_whole_quote_carries_only_its_range() -> None:
    found = quote.head_quote(Record.shown("ep:1", "[Episode] Session on billing"), "x", 800)
    assert quotes.descriptors(found) == {"ranges": [[0, 18]]}
    assert quotes.descriptors(found, mode=True) == {}
    assert quotes.descriptors(found, trace=True) == {"quote_basis": "whole", "ranges": [[0, 18]]}
    assert quotes.excerpt(found) == {"ref": "ep:1", "content": "Session on billing"}


def test_a_cut_quote_carries_its_length_ranges_and_expand_in_order() -> None:
    text = "One sentence only " * 30
    found = quote.head_quote(Record("mem:3", text), "sentence", 100)
    compact = quotes.descriptors(found)
    assert list(compact) == ["content_len", "expand", "ranges"]
    assert compact["expand"] == {
        "ref": "mem:3",
        "span": [0, len(text)],
        "revision": found.expand.revision if found.expand else None,
    }
    traced = quotes.descriptors(found, trace=True)
    assert list(traced) == ["content_len", "content_truncated", "expand", "quote_basis", "ranges"]
    assert traced["quote_basis"] == "start"


def test_a_filled_head_quote_and_its_excerpt() -> None:
    text, _, _ = long_record()
    head = quote.head_quote(Record("mem:1", text), "greyhound Pixel derby", 800)
    fields = quotes.descriptors(head)
    assert fields["content_len"] == 1709
    assert len(fields["ranges"]) > 1
    cut = quote.excerpt_quote(Record("mem:2", text), "Wimbledon", 500)
    wire = quotes.excerpt(cut)
    assert list(wire)[:3] == ["ref", "content", "content_len"]


def test_budget_fields_compact_and_traced() -> None:
    default = budget.resolve(None, 10, QuoteSettings())
    assert quotes.budget_fields(default, 700, cut=False) == {}
    assert quotes.budget_fields(default, 700, cut=True) == {
        "effective_budget": 6000,
        "used_budget": 700,
    }
    assert quotes.budget_fields(default, 700, cut=True, mode=True) == {}
    raised = budget.resolve(10, 10, QuoteSettings())
    assert quotes.budget_fields(raised, 800, cut=False) == {
        "requested_budget": 10,
        "budget_policy": {"source": "caller", "clamped": True, "reason": "raised_to_one_excerpt"},
    }
    traced = quotes.budget_fields(default, 700, cut=False, trace=True)
    assert list(traced) == ["requested_budget", "effective_budget", "used_budget", "budget_policy"]
    assert traced["requested_budget"] is None
    assert traced["budget_policy"]["reason"] == "default_fits_the_window"
