"""reconstruct on the wire (docs/tools.md, "reconstruct"): the library's items, quoted
within the budget, in the key order of the compact answer.

The library (``service.memory.reconstruct``) decides items, heads, claims and their
order and hands over full texts; this module decides what of them an answer shows:
the quotes (a head at its position's cap, other claims as excerpts), the budget and its
policy, the longest prefix of the payload sequence that fits it, and which fields a
compact answer keeps. Items come best first, the opposite of recall's wire order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from service.memory.reconstruct.records import Claim, Item, Reconstruction
from service.models import JsonObject

HEAD_CHARS: Final = 800
"""A head quote's cap for the first ``FULL_QUOTES`` items."""
FULL_QUOTES: Final = 5
TAIL_HEAD_CHARS: Final = 400
"""A head quote's cap after the first ``FULL_QUOTES`` items."""
EXCERPT_CHARS: Final = 500
"""An excerpt's cap (the other claims of an item)."""
DEFAULT_BUDGET: Final = 4000
MAX_BUDGET: Final = 20_000
LITE_BUDGET: Final = 2800
MODE_CAPS: Final = {"lite": 3000, "pro": 5000}


@dataclasses.dataclass(frozen=True, slots=True)
class Quote:
    """What an answer shows of one record: ``content``, and ``content_len`` when it is
    shorter than the stored text (None: whole)."""

    ref: str
    content: str
    content_len: int | None


def quote(claim: Claim, cap: int) -> Quote:
    """The record's stored text when it fits ``cap``, else its first ``cap`` characters
    with the full length."""
    text = claim.row.text
    if len(text) <= cap:
        return Quote(claim.ref, text, None)
    return Quote(claim.ref, text[:cap], len(text))


def head_cap(position: int) -> int:
    return HEAD_CHARS if position < FULL_QUOTES else TAIL_HEAD_CHARS


@dataclasses.dataclass(frozen=True, slots=True)
class Budget:
    """The resolved budget: the caller's value (None: omitted), the effective characters
    and the policy (``source``, ``clamped``, ``reason``)."""

    requested: int | None
    effective: int
    source: str
    clamped: bool
    reason: str

    @property
    def shows_policy(self) -> bool:
        return self.clamped or self.source == "operator_forced"


def resolve_budget(requested: int | None, items: int, mode: str | None) -> Budget:
    """Caller's budget, else lite's own, else the default raised to the sum of the head
    caps of ``items`` positions; at most ``MAX_BUDGET``, at least one head quote."""
    if requested is not None:
        base, source, reason = requested, "caller", "budget_requested"
    elif mode == "lite":
        base, source, reason = LITE_BUDGET, "server_default", "budget_omitted"
    else:
        base, source, reason = DEFAULT_BUDGET, "server_default", "budget_omitted"
        heads = sum(head_cap(position) for position in range(items))
        if heads > base:
            base, reason = heads, "default_fits_the_window"
    effective = min(base, MAX_BUDGET)
    if effective < HEAD_CHARS:
        effective, reason = HEAD_CHARS, "raised_to_one_excerpt"
    return Budget(requested, effective, source, effective != base, reason)


@dataclasses.dataclass(frozen=True, slots=True)
class Quoted:
    """One item with its quotes: the head and the other claims' excerpts (relevance
    order)."""

    item: Item
    head: Quote
    excerpts: tuple[Quote, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Allocated:
    """The prefix that fits: per returned item, how many excerpts it keeps; the
    characters used; whether a window item or held items were cut."""

    kept: tuple[tuple[Quoted, int], ...]
    used: int
    window_cut: bool
    reserved_omitted: int


def allocate(quoted: Sequence[Quoted], budget: int) -> Allocated:
    """The "items" sequence (every head in item order, then every item's first
    excerpt, then every second one...) cut to its longest prefix within ``budget``; the
    first head always fits."""
    steps = [(i, -1, len(q.head.content)) for i, q in enumerate(quoted)]
    rounds = max((len(q.excerpts) for q in quoted), default=0)
    steps += [
        (i, r, len(q.excerpts[r].content))
        for r in range(rounds)
        for i, q in enumerate(quoted)
        if r < len(q.excerpts)
    ]
    used, taken = 0, 0
    while taken < len(steps) and (taken == 0 or used + steps[taken][2] <= budget):
        used += steps[taken][2]
        taken += 1
    heads = {i for i, r, _ in steps[:taken] if r < 0}
    excerpts = [0] * len(quoted)
    for i, r, _ in steps[:taken]:
        if r >= 0 and i in heads:
            excerpts[i] += 1
    kept = tuple((q, excerpts[i]) for i, q in enumerate(quoted) if i in heads)
    dropped = [q for i, q in enumerate(quoted) if i not in heads]
    return Allocated(
        kept,
        used,
        any(not q.item.held for q in dropped),
        sum(1 for q in dropped if q.item.held),
    )


def quoted_items(result: Reconstruction) -> list[Quoted]:
    return [
        Quoted(
            item,
            quote(item.head, head_cap(position)),
            tuple(quote(c, EXCERPT_CHARS) for c in item.relevance if c is not item.head),
        )
        for position, item in enumerate(result.items)
    ]


def answer(result: Reconstruction, requested_budget: int | None, trace: bool) -> JsonObject:
    """The answer of one reconstruct in the compact form (every field with ``trace``)."""
    held = result.reserved_count
    budget = resolve_budget(requested_budget, result.count.effective + held, result.mode)
    done = allocate(quoted_items(result), budget.effective)
    lite = result.mode is not None
    items = [_item(q, n, lite, trace) for q, n in done.kept]
    omitted = sum(len(q.excerpts) - n for q, n in done.kept)
    window = sum(1 for q, _ in done.kept if not q.item.held)
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
    if budget.shows_policy or trace:
        body["requested_budget"] = budget.requested
    cut = done.window_cut or done.reserved_omitted > 0 or omitted > 0
    if (cut or trace) and not lite:
        body["effective_budget"] = budget.effective
        body["used_budget"] = done.used
    if budget.shows_policy or trace:
        body["budget_policy"] = {
            "source": budget.source,
            "clamped": budget.clamped,
            "reason": budget.reason,
        }
    _envelope(body, result, len(items), trace)
    if held or trace:
        body["reserved_count"] = sum(1 for q, _ in done.kept if q.item.held)
    if done.reserved_omitted and not lite:
        body["reserved_omitted"] = done.reserved_omitted
    shortfall = _shortfall(result, window, done.window_cut)
    if shortfall is not None:
        body["shortfall_reason"] = shortfall
    if result.mode is not None:
        body["mode"] = result.mode
        body["cap"] = MODE_CAPS[result.mode]
    return body


def _shortfall(result: Reconstruction, window: int, window_cut: bool) -> str | None:
    if result.shortfall in ("count_zero", "no_relevant_evidence"):
        return result.shortfall
    if window >= result.count.effective:
        return None
    if window_cut:
        return "budget_exhausted"
    return result.shortfall or "exhausted_candidates"


def _envelope(body: JsonObject, result: Reconstruction, returned: int, trace: bool) -> None:
    """``bounds``, ``reconstruction``, the recall's notices and ``trace``."""
    bounds = result.bounds_for(returned)
    lite = result.mode is not None
    if trace or (not lite and (bounds.omitted or bounds.reached or bounds.lowered)):
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


def _item(quoted: Quoted, excerpts: int, lite: bool, trace: bool) -> JsonObject:
    """One item: ``content``, ``head_ref``, ``claims`` (newest first), why it stands
    alone, conflicts, the quote's descriptors, excerpts (relevance order)."""
    item, head = quoted.item, quoted.head
    body: JsonObject = {"content": head.content, "head_ref": item.head.ref}
    claims = [_claim(claim, trace) for claim in item.claims]
    if lite and not trace and len(claims) == 1 and set(claims[0]) == {"ref", "as_of"}:
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
    if item.claims_omitted:
        body["claims_omitted"] = item.claims_omitted
    if item.held:
        body["admission"] = "reservation"
    _descriptors(body, head, lite, trace)
    shown = [_excerpt(q, lite, trace) for q in quoted.excerpts[:excerpts]]
    if shown:
        body["excerpts"] = shown
    if len(quoted.excerpts) > excerpts:
        body["excerpts_omitted"] = len(quoted.excerpts) - excerpts
    return body


def _descriptors(body: JsonObject, quoted: Quote, lite: bool, trace: bool) -> None:
    if quoted.content_len is not None:
        body["content_len"] = quoted.content_len
    if trace:
        body["quote_basis"] = "whole" if quoted.content_len is None else "start"
        body["content_truncated"] = quoted.content_len is not None
    if not lite:
        body["ranges"] = [[0, len(quoted.content)]]


def _excerpt(quoted: Quote, lite: bool, trace: bool) -> JsonObject:
    body: JsonObject = {"ref": quoted.ref, "content": quoted.content}
    if quoted.content_len is not None:
        body["content_len"] = quoted.content_len
    if trace:
        body["content_truncated"] = quoted.content_len is not None
    return body


def _claim(claim: Claim, trace: bool) -> JsonObject:
    body: JsonObject = {"ref": claim.ref, "as_of": claim.row.as_of}
    if claim.why != "seed" or trace:
        body["why"] = claim.why
    if claim.hops is not None:
        body["hops"] = claim.hops
    if claim.roles:
        body["roles"] = [{"ref": role.ref, "role": role.role} for role in claim.roles]
    return body
