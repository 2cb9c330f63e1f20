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
from service.mcp.render import quotes, recall as recall_render, reconstruct_trace
from service.mcp.render.reconstruct_cut import (
    Cut,
    Sequence,
    Shown,
    claim_record,
    kept_refs,
    shows,
)
from service.mcp.shaping.reconstruct import allocate, budget as budgets, modes, quote
from service.mcp.shaping.reconstruct.budget import Budget, QuoteSettings
from service.mcp.shaping.reconstruct.counter import cl100k_tokens
from service.memory.reconstruct.records import Claim, Conflict, Item, Reconstruction
from service.models import JsonObject


def _others(item: Item) -> list[Claim]:
    """The item's claims other than the head, in relevance order (excerpts' order)."""
    return [claim for claim in item.relevance if claim is not item.head]


def _items_cut(result: Reconstruction, qs: QuoteSettings, budget: int) -> Cut:
    """The "items" sequence (heads, then excerpt rounds) cut to ``budget``; excerpts are
    quoted only as far as the prefix reaches (``allocate.cut_items_lazily``)."""
    query, items = result.query, result.items
    heads = [
        budgets.head_quote(claim_record(item.head), query, position, qs)
        for position, item in enumerate(items)
    ]
    others = [_others(item) for item in items]
    quoted: dict[tuple[int, int], quote.Quote] = {}

    def excerpt(item: int, r: int) -> quote.Quote:
        if (item, r) not in quoted:
            record = claim_record(others[item][r])
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
        Shown(
            items[t.item],
            heads[t.item],
            tuple(excerpt(t.item, r) for r in range(t.excerpts)),
            t.excerpts_omitted,
        )
        for t in cut.items
    )
    return Cut(shown, cut.used, cut.window_cut, cut.reserved_omitted, cut.breakpoints)


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
    passages = [quote.passages(claim_record(item.head), query) for item in result.items]
    excerpts = [
        [quote.excerpt_quote(claim_record(c), query, qs.excerpt_chars) for c in _others(item)]
        for item in result.items
    ]
    steps = allocate.whole_sequence(
        passages,
        [[len(e.content) for e in row] for row in excerpts],
        [item.held for item in result.items],
        pro=result.mode == "pro",
    )
    return _Whole(passages, excerpts, steps)


def _whole_cut(result: Reconstruction, whole: _Whole, budget: int, claims: int | None) -> Cut:
    cut = allocate.cut(whole.steps, budget, [item.held for item in result.items])
    shown = tuple(
        Shown(
            result.items[t.item],
            quote.passage_quote(whole.passages[t.item], t.passages),
            tuple(whole.excerpts[t.item][: t.excerpts]),
            t.excerpts_omitted,
            claims if position == 0 else None,
        )
        for position, t in enumerate(cut.items)
    )
    taken = sum(len(t.passages) + t.excerpts for t in cut.items)
    sequence = Sequence("whole", len(whole.steps), taken, whole.chars)
    return Cut(shown, cut.used, cut.window_cut, cut.reserved_omitted, cut.breakpoints, sequence)


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


def _body(result: Reconstruction, budget: Budget, cut: Cut, trace: bool) -> JsonObject:
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
    _envelope(body, result, cut, trace)
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


def _envelope(body: JsonObject, result: Reconstruction, cut: Cut, trace: bool) -> None:
    """``bounds``, ``reconstruction``, the recall's notices and ``trace``."""
    returned = len(cut.shown)
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
        body["trace"] = reconstruct_trace.trace(result, cut)


def _item(shown: Shown, mode: bool, trace: bool) -> JsonObject:
    """One item: ``content``, ``head_ref``, ``claims`` (newest first), why it stands
    alone, conflicts, the head quote's descriptors, excerpts (relevance order)."""
    item, head = shown.item, shown.head
    kept = kept_refs(shown)
    claims = [_claim(claim, kept, trace) for claim in item.claims if shows(kept, claim.ref)]
    omitted = item.claims_omitted + len(item.claims) - len(claims)
    body: JsonObject = {"content": head.content, "head_ref": item.head.ref}
    body.update(_claims_of(claims, compact=mode and not trace))
    if item.independence_reason != "singleton" or trace:
        body["independence_reason"] = item.independence_reason
    if item.conflicts:
        body["conflicts"] = [_conflict(c) for c in item.conflicts]
    if omitted:
        body["claims_omitted"] = omitted
    if item.held:
        body["admission"] = "reservation"
    body.update(quotes.descriptors(head, trace=trace, mode=mode))
    excerpts = [
        quotes.excerpt(q, trace=trace, mode=mode) for q in shown.excerpts if shows(kept, q.ref)
    ]
    if excerpts:
        body["excerpts"] = excerpts
    if shown.excerpts_omitted:
        body["excerpts_omitted"] = shown.excerpts_omitted
    return body


def _claims_of(claims: list[JsonObject], *, compact: bool) -> JsonObject:
    """An item's ``claims``; under a mode (``compact``) each ``as_of`` in its shortest form
    (``modes.short_time``), and an ``as_of`` every claim shares said once, as the item's
    ``as_of`` before them (a time repeated per claim is the largest repeated text of a
    bundled item: the turns of one session share its timestamp), and a lone claim that
    says nothing more than the head's ref left out. Nothing is lost: a claim without
    ``as_of`` has the item's."""
    if not compact:
        return {"claims": claims}
    claims = [{**claim, "as_of": modes.short_time(str(claim["as_of"]))} for claim in claims]
    stamps = {claim["as_of"] for claim in claims}
    if len(stamps) != 1:
        return {"claims": claims}
    rest = [{k: v for k, v in claim.items() if k != "as_of"} for claim in claims]
    if len(rest) == 1 and set(rest[0]) == {"ref"}:
        return {"as_of": claims[0]["as_of"]}
    return {"as_of": claims[0]["as_of"], "claims": rest}


def _conflict(conflict: Conflict) -> JsonObject:
    """``{refs, reason, msg_id?}``: ``msg_id`` names the shared message id of a
    ``same_msg_id_same_timestamp`` conflict; a declared one has none."""
    body: JsonObject = {"refs": list(conflict.refs), "reason": conflict.reason}
    if conflict.reason == "same_msg_id_same_timestamp":
        body["msg_id"] = conflict.msg_id
    return body


def _claim(claim: Claim, kept: frozenset[str] | None, trace: bool) -> JsonObject:
    """``{ref, as_of, why?, hops?, roles?}``, and a chained claim's ``valid_to`` (when
    superseded), ``supersedes`` and ``superseded_by`` refs (docs/tools.md, "Facts that
    change"): its ``as_of`` is its ``valid_from`` as stored."""
    body: JsonObject = {"ref": claim.ref, "as_of": claim.row.as_of}
    if claim.why != "seed" or trace:
        body["why"] = claim.why
    if claim.hops is not None:
        body["hops"] = claim.hops
    roles = [role for role in claim.roles if shows(kept, role.ref)]
    if roles:
        body["roles"] = [{"ref": role.ref, "role": role.role} for role in roles]
    fact = claim.row.fact
    if fact is not None and fact.chained:
        body.update({k: v for k, v in recall_render.fact(fact).items() if k != "valid_from"})
    return body
