"""reconstruct on the wire (docs/tools.md, "reconstruct"): the library's items, quoted
within the budget, in the key order of the compact answer.

The library (``service.memory.reconstruct``) decides items, heads, claims and their
order and hands over full texts; the boundary decides what of them an answer shows
(``service.mcp.shaping.reconstruct``: quotes, the budget and its policy, the payload
sequences and their cut, a mode's token cap). This module puts them together and spells
the wire keys. Items come best first, the opposite of recall's wire order.
"""

from __future__ import annotations

import dataclasses

from service.config import Settings
from service.mcp.render import quotes, recall as recall_render
from service.mcp.shaping.reconstruct import allocate, budget as budgets, modes, quote
from service.mcp.shaping.reconstruct.budget import Budget, QuoteSettings
from service.mcp.shaping.reconstruct.counter import cl100k_tokens
from service.mcp.shaping.reconstruct.records import Record
from service.memory.reconstruct.records import Claim, Item, Reconstruction
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True)
class _Shown:
    """One returned item: its head quote, the excerpts the prefix kept, how many it cut,
    and (under a mode's fitting) how many claims the first item keeps (None: all)."""

    item: Item
    head: quote.Quote
    excerpts: tuple[quote.Quote, ...]
    excerpts_omitted: int
    claims: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _Cut:
    """What a budget's prefix returns, and what the envelope reports of it."""

    shown: tuple[_Shown, ...]
    used: int
    window_cut: bool
    reserved_omitted: int
    breakpoints: tuple[int, ...]


def _others(item: Item) -> list[Claim]:
    """The item's claims other than the head, in relevance order (excerpts' order)."""
    return [claim for claim in item.relevance if claim is not item.head]


def _record(claim: Claim) -> Record:
    """The claim's stored text, with its best passage by meaning when recall scored one."""
    found = claim.row.passage
    end = None if found is None else min(found.end, len(claim.row.text))
    if found is None or end is None or found.start >= end:
        return Record(claim.ref, claim.row.text)
    return Record(claim.ref, claim.row.text, (found.start, end, found.cosine))


def _items_cut(result: Reconstruction, qs: QuoteSettings, budget: int) -> _Cut:
    """The "items" sequence (heads, then excerpt rounds) cut to ``budget``; excerpts are
    quoted only as far as the prefix reaches (``allocate.cut_items_lazily``)."""
    query, items = result.query, result.items
    heads = [
        budgets.head_quote(_record(item.head), query, position, qs)
        for position, item in enumerate(items)
    ]
    others = [_others(item) for item in items]
    quoted: dict[tuple[int, int], quote.Quote] = {}

    def excerpt(item: int, r: int) -> quote.Quote:
        if (item, r) not in quoted:
            record = _record(others[item][r])
            quoted[item, r] = quote.excerpt_quote(record, query, qs.excerpt_chars)
        return quoted[item, r]

    cut = allocate.cut_items_lazily(
        [len(head.content) for head in heads],
        [len(claims) for claims in others],
        lambda item, r: len(excerpt(item, r).content),
        budget,
        [item.held for item in items],
    )
    shown = tuple(
        _Shown(
            items[t.item],
            heads[t.item],
            tuple(excerpt(t.item, r) for r in range(t.excerpts)),
            t.excerpts_omitted,
        )
        for t in cut.items
    )
    return _Cut(shown, cut.used, cut.window_cut, cut.reserved_omitted, cut.breakpoints)


@dataclasses.dataclass(frozen=True, slots=True)
class _Whole:
    """The "whole" sequence of a mode's answer: the head records divided into passages,
    every excerpt quoted, the steps."""

    passages: list[quote.Passages]
    excerpts: list[list[quote.Quote]]
    steps: list[allocate.Step]

    @property
    def chars(self) -> int:
        return sum(step.cost for step in self.steps)


def _whole(result: Reconstruction, qs: QuoteSettings) -> _Whole:
    query = result.query
    passages = [quote.passages(_record(item.head), query) for item in result.items]
    excerpts = [
        [quote.excerpt_quote(_record(c), query, qs.excerpt_chars) for c in _others(item)]
        for item in result.items
    ]
    steps = allocate.whole_sequence(
        passages,
        [[len(e.content) for e in row] for row in excerpts],
        [item.held for item in result.items],
        pro=result.mode == "pro",
    )
    return _Whole(passages, excerpts, steps)


def _whole_cut(result: Reconstruction, whole: _Whole, budget: int, claims: int | None) -> _Cut:
    cut = allocate.cut(whole.steps, budget, [item.held for item in result.items])
    shown = tuple(
        _Shown(
            result.items[t.item],
            quote.passage_quote(whole.passages[t.item], t.passages),
            tuple(whole.excerpts[t.item][: t.excerpts]),
            t.excerpts_omitted,
            claims if position == 0 else None,
        )
        for position, t in enumerate(cut.items)
    )
    return _Cut(shown, cut.used, cut.window_cut, cut.reserved_omitted, cut.breakpoints)


def answer(
    result: Reconstruction,
    requested_budget: int | None,
    trace: bool,
    settings: Settings,
    notes: JsonObject | None = None,
) -> JsonObject:
    """The answer of one reconstruct: compact (every field with ``trace``), the project
    gate's ``notes`` after its own keys; under a mode the longest prefix whose whole
    rendering, notes included, fits the mode's token cap, ``mode``, ``cap`` and
    ``used_tokens`` last (with ``trace``: every field, and ``used_tokens`` of the
    untraced answer). Raises ``modes.CapBelowMinimum`` when not even one item fits."""
    return _answer(result, requested_budget, trace, settings, notes or {})


def _answer(
    result: Reconstruction,
    requested_budget: int | None,
    trace: bool,
    settings: Settings,
    notes: JsonObject,
) -> JsonObject:
    qs = QuoteSettings.of(settings)
    held = result.reserved_count
    budget = budgets.resolve(requested_budget, result.count.effective + held, qs, result.mode)
    if result.mode is None:
        assert budget.effective is not None  # only pro without a budget is uncapped
        return {**_body(result, budget, _items_cut(result, qs, budget.effective), trace), **notes}
    whole = _whole(result, qs)
    budget = budgets.uncapped(budget, whole.chars)
    effective = budget.effective
    assert effective is not None  # made the whole sequence just above

    def build(chars: int, claims: int | None, traced: bool = False) -> JsonObject:
        return {**_body(result, budget, _whole_cut(result, whole, chars, claims), traced), **notes}

    spec = modes.MODES[result.mode]
    breakpoints = _whole_cut(result, whole, effective, None).breakpoints
    first = len(result.items[0].relevance) if result.items else 1
    fitted = modes.fit(build, spec, effective, breakpoints, first, cl100k_tokens)
    if not trace:
        return fitted.answer
    traced = build(fitted.budget, fitted.claims, True)
    return {**traced, "mode": spec.name, "cap": spec.cap, "used_tokens": fitted.used_tokens}


def _body(result: Reconstruction, budget: Budget, cut: _Cut, trace: bool) -> JsonObject:
    """The answer's keys in wire order, up to (not including) ``mode``."""
    mode = result.mode is not None
    items = [_item(shown, mode, trace) for shown in cut.shown]
    excerpts_cut = sum(shown.excerpts_omitted for shown in cut.shown)
    body: JsonObject = {"items": items}
    count = result.count
    if count.reported or trace:
        body["requested_count"] = count.requested
    body["effective_count"] = count.effective
    body["returned_count"] = len(items)
    if count.reported or trace:
        body["count_policy"] = {
            "source": count.source,
            "clamped": count.clamped,
            "reason": count.reason,
        }
    wasted = budgets.shows_usage(cut.window_cut, cut.reserved_omitted, excerpts_cut)
    body.update(quotes.budget_fields(budget, cut.used, cut=wasted, trace=trace, mode=mode))
    _envelope(body, result, len(items), trace)
    returned_held = sum(1 for shown in cut.shown if shown.item.held)
    if result.reserved_count or trace:
        body["reserved_count"] = returned_held
    if cut.reserved_omitted and (trace or not mode):
        body["reserved_omitted"] = cut.reserved_omitted
    shortfall = allocate.shortfall_reason(
        count.effective,
        len(items) - returned_held,
        candidates=result.candidate_count > 0,
        gate_fallback=result.gate_fallback,
        window_cut=cut.window_cut,
    )
    if shortfall is not None:
        body["shortfall_reason"] = shortfall
    return body


def _envelope(body: JsonObject, result: Reconstruction, returned: int, trace: bool) -> None:
    """``bounds``, ``reconstruction``, the recall's notices and ``trace``."""
    bounds = result.bounds_for(returned)
    mode = result.mode is not None
    if trace or (not mode and (bounds.omitted or bounds.reached or bounds.lowered)):
        shown: JsonObject = {
            "top_k": bounds.top_k,
            "max_hops": bounds.max_hops,
            "max_evidence": bounds.max_evidence,
        }
        if bounds.omitted:
            shown["omitted"] = list(bounds.omitted)
        if bounds.reached:
            shown["reached"] = list(bounds.reached)
        body["bounds"] = shown
    if trace:
        body["reconstruction"] = {
            "policy": "v1",
            "candidate_count": result.candidate_count,
            "cluster_count": result.cluster_count,
            "selected_count": returned,
            "excluded_without_provenance": result.excluded_without_provenance,
        }
    elif result.excluded_without_provenance:
        body["reconstruction"] = {"excluded_without_provenance": result.excluded_without_provenance}
    if result.advisory is not None:
        advisory = result.advisory
        body["advisory"] = {
            "severity": advisory.severity,
            "reason": advisory.reason,
            "evidence": advisory.evidence,
            "runbook": advisory.runbook,
        }
    if result.time_cue is not None:
        body["time_cue"] = recall_render.time_cue(result.time_cue)
    if result.gate_fallback:
        body["gate_fallback"] = True
    if trace:
        body["trace"] = _trace(result)


def _trace(result: Reconstruction) -> JsonObject:
    """Refs, clusters and cues: never stored text."""
    facts: JsonObject = {
        "candidate_refs": list(result.trace.candidate_refs),
        "clusters": [list(cluster) for cluster in result.trace.clusters],
    }
    cues = result.trace.cues
    if cues.entities:
        shown: JsonObject = {"entities": list(cues.entities), "terms": list(cues.terms)}
        if cues.terms_omitted:
            shown["terms_omitted"] = cues.terms_omitted
        facts["cues"] = shown
    return facts


def _kept(shown: _Shown) -> frozenset[str] | None:
    """The refs of the claims the item shows: None for all, or (a mode's fitting) its
    first ``claims`` by relevance."""
    if shown.claims is None:
        return None
    return frozenset(claim.ref for claim in shown.item.relevance[: shown.claims])


def _shows(kept: frozenset[str] | None, ref: str) -> bool:
    return kept is None or ref in kept


def _item(shown: _Shown, mode: bool, trace: bool) -> JsonObject:
    """One item: ``content``, ``head_ref``, ``claims`` (newest first), why it stands
    alone, conflicts, the head quote's descriptors, excerpts (relevance order)."""
    item, head = shown.item, shown.head
    kept = _kept(shown)
    claims = [_claim(claim, kept, trace) for claim in item.claims if _shows(kept, claim.ref)]
    omitted = item.claims_omitted + len(item.claims) - len(claims)
    body: JsonObject = {"content": head.content, "head_ref": item.head.ref}
    if mode and not trace and len(claims) == 1 and set(claims[0]) == {"ref", "as_of"}:
        body["as_of"] = claims[0]["as_of"]
    else:
        body["claims"] = claims
    if item.independence_reason != "singleton" or trace:
        body["independence_reason"] = item.independence_reason
    if item.conflicts:
        body["conflicts"] = [
            {"refs": list(c.refs), "reason": "same_msg_id_same_timestamp", "msg_id": c.msg_id}
            for c in item.conflicts
        ]
    if omitted:
        body["claims_omitted"] = omitted
    if item.held:
        body["admission"] = "reservation"
    body.update(quotes.descriptors(head, trace=trace, mode=mode))
    excerpts = [
        quotes.excerpt(q, trace=trace, mode=mode) for q in shown.excerpts if _shows(kept, q.ref)
    ]
    if excerpts:
        body["excerpts"] = excerpts
    if shown.excerpts_omitted:
        body["excerpts_omitted"] = shown.excerpts_omitted
    return body


def _claim(claim: Claim, kept: frozenset[str] | None, trace: bool) -> JsonObject:
    body: JsonObject = {"ref": claim.ref, "as_of": claim.row.as_of}
    if claim.why != "seed" or trace:
        body["why"] = claim.why
    if claim.hops is not None:
        body["hops"] = claim.hops
    roles = [role for role in claim.roles if _shows(kept, role.ref)]
    if roles:
        body["roles"] = [{"ref": role.ref, "role": role.role} for role in roles]
    return body
