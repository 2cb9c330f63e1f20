"""reconstruct's modes: the cl100k_base counter, used_tokens, and fitting the token cap."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from service.mcp.shaping.reconstruct import allocate, counter, modes, quote
from service.mcp.shaping.reconstruct.modes import ModeSpec
from service.mcp.shaping.reconstruct.records import Record
from service.mcp.shaping.tokens import render

PROPERTY = settings(database=None, deadline=None, max_examples=60)
LITE = modes.MODES["lite"]


def test_the_counter_is_exactly_cl100k_base() -> None:
    encoding = counter._encoding()
    assert encoding.encode("hello world") == [15339, 1917]
    assert encoding.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert counter.cl100k_tokens("<|endoftext|>") > 1  # a special token's spelling is text
    assert counter.cl100k_tokens("") == 0


def test_used_tokens_counts_the_rendered_answer_with_itself() -> None:
    answer = {"items": [{"content": "x" * 4000}], "mode": "lite", "cap": 3000}
    settled = modes.settle(answer, counter.cl100k_tokens)
    assert list(settled)[-1] == "used_tokens"
    assert settled["used_tokens"] == counter.cl100k_tokens(render(settled))
    assert modes.settle(settled, counter.cl100k_tokens) == settled


def corpus(n: int, length: int = 1200) -> list[Record]:
    sentence = "Record {n} tells about the migration of the billing database, step {k}. "
    return [
        Record(f"mem:{n}", "".join(sentence.format(n=n, k=k) for k in range(length // 70)))
        for n in range(n)
    ]


def builder(records: list[Record], query: str) -> tuple[modes.Builder, tuple[int, ...]]:
    """A reconstruct-like answer over ``records``: items of the 'whole' sequence, each
    with three claims; the first item's claims can be reduced."""
    divided = [quote.passages(r, query) for r in records]
    held = [False] * len(records)
    steps = allocate.whole_sequence(divided, [[] for _ in records], held)

    def build(budget: int, claims: int | None) -> modes.Answer:
        cut = allocate.cut(steps, budget, held)
        items: list[object] = []
        for position, taken in enumerate(cut.items):
            shown = quote.passage_quote(divided[taken.item], taken.passages)
            kept = 3 if position or claims is None else claims
            item: dict[str, object] = {"content": shown.content, "head_ref": shown.ref}
            item["claims"] = [
                {"ref": f"{shown.ref}.{c}", "as_of": "2026-12-04 10:00:00"} for c in range(kept)
            ]
            if kept < 3:
                item["claims_omitted"] = 3 - kept
            items.append(item)
        return {"items": items, "effective_count": 10, "returned_count": len(items)}

    return build, allocate.cut(steps, 10**9, held).breakpoints


def test_acceptance_9_lite_ends_with_mode_cap_and_exact_used_tokens() -> None:
    build, breakpoints = builder(corpus(10), "billing migration")
    fitted = modes.fit(build, LITE, 2800, breakpoints, 3, counter.cl100k_tokens)
    answer = fitted.answer
    assert list(answer)[-3:] == ["mode", "cap", "used_tokens"]
    assert (answer["mode"], answer["cap"]) == ("lite", 3000)
    assert answer["used_tokens"] == counter.cl100k_tokens(render(answer))
    assert fitted.used_tokens <= 3000


def test_an_answer_over_the_cap_is_cut_to_the_longest_prefix_that_fits() -> None:
    build, breakpoints = builder(corpus(15, 3000), "billing migration")
    small = ModeSpec("pro", 1500, 15, None)
    fitted = modes.fit(build, small, breakpoints[-1], breakpoints, 3, counter.cl100k_tokens)
    assert fitted.used_tokens <= 1500
    after = [end for end in breakpoints if end > fitted.budget]
    assert after, "the full answer should not have fitted"
    longer = modes.settle(
        {**build(after[0], None), "mode": "pro", "cap": 1500}, counter.cl100k_tokens
    )
    assert modes.used_tokens(longer) > 1500
    assert fitted.claims is None


def test_the_first_items_claims_are_reduced_before_failing() -> None:
    def build(budget: int, claims: int | None) -> modes.Answer:
        kept = 40 if claims is None else claims
        return {"items": [{"content": "short", "claims": ["mem:1 claim"] * kept}]}

    tight = ModeSpec("lite", 60, 10, 2800)
    fitted = modes.fit(build, tight, 800, [5], 40, counter.cl100k_tokens)
    assert fitted.claims is not None
    assert 1 <= fitted.claims < 40
    assert fitted.used_tokens <= 60


def test_a_cap_below_the_smallest_answer_fails_with_cap_below_minimum() -> None:
    def build(budget: int, claims: int | None) -> modes.Answer:
        return {"items": [{"content": "word " * 400}], "advisory": {"kind": "degraded"}}

    with pytest.raises(modes.CapBelowMinimum) as failure:
        modes.fit(build, ModeSpec("lite", 300, 10, 2800), 2800, [2000], 1, counter.cl100k_tokens)
    error = failure.value
    assert error.message == "cap_below_minimum"
    assert error.details["items"] == []
    assert error.details["returned_count"] == 0
    assert (error.details["mode"], error.details["cap"]) == ("lite", 300)
    assert error.details["advisory"] == {"kind": "degraded"}
    assert "cap of 300 tokens" in str(error.details["detail"])
    json.dumps(error.details)  # renderable


@PROPERTY
@given(caps=st.lists(st.integers(200, 6000), min_size=2, max_size=2), n=st.integers(1, 8))
def test_a_larger_cap_never_removes_an_item_or_excerpt(caps: list[int], n: int) -> None:
    build, breakpoints = builder(corpus(n, 2000), "billing step 3")
    low, high = sorted(caps)
    fits: list[modes.Fitted | None] = []
    for cap in (low, high):
        spec = ModeSpec("pro", cap, 15, None)
        try:
            fits.append(
                modes.fit(build, spec, breakpoints[-1], breakpoints, 3, counter.cl100k_tokens)
            )
        except modes.CapBelowMinimum:
            fits.append(None)
    small, large = fits
    if small is None:
        return
    assert large is not None
    assert small.budget <= large.budget
    assert (small.claims or 3) <= (large.claims or 3)
