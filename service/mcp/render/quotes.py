"""reconstruct's quotes and budget fields on the wire (docs/tools.md, "reconstruct:
quoting"; docs/tools.md, "reconstruct: budget").

The tool places these keys into its items and envelope; their order here is the order
they take there: an item's quote descriptors follow its ``claims`` and
``independence_reason`` (``content_len``, ``content_truncated``, ``expand``,
``context_incomplete``, ``quote_basis``, ``ranges``), and the budget fields sit between
``count_policy`` and ``bounds``. The compact answer leaves out ``content_truncated`` and
``quote_basis`` (kept under ``trace``); a mode's answer also leaves out an item's
``ranges``.
"""

from __future__ import annotations

from service.mcp.shaping.reconstruct import budget as budgets
from service.mcp.shaping.reconstruct.budget import Budget
from service.mcp.shaping.reconstruct.quote import Expand, Quote
from service.models import JsonObject


def expand(found: Expand) -> JsonObject:
    """``{ref, span, revision}``, the argument ``get_contents`` takes to read on."""
    return {"ref": found.ref, "span": list(found.span), "revision": found.revision}


def descriptors(quote: Quote, *, trace: bool = False, mode: bool = False) -> JsonObject:
    """The keys that describe a quote, after its ``content``: ``content_len`` (and under
    ``trace`` ``content_truncated``) when the quote is not the whole text, ``expand``,
    ``context_incomplete``, ``quote_basis`` under ``trace``, and ``ranges`` unless
    ``mode``."""
    out: JsonObject = {}
    if quote.truncated:
        out["content_len"] = quote.content_len
        if trace:
            out["content_truncated"] = True
    if quote.expand is not None:
        out["expand"] = expand(quote.expand)
    if quote.context_incomplete:
        out["context_incomplete"] = True
    if trace:
        out["quote_basis"] = quote.basis
    if not mode:
        out["ranges"] = [list(span) for span in quote.ranges]
    return out


def excerpt(quote: Quote, *, trace: bool = False, mode: bool = False) -> JsonObject:
    """One entry of an item's ``excerpts``: ``{ref, content}``, and the descriptors when
    the excerpt is a part of its record (a whole one needs none)."""
    out: JsonObject = {"ref": quote.ref, "content": quote.content}
    if quote.truncated or trace:
        out.update(descriptors(quote, trace=trace, mode=mode))
    return out


def budget_fields(
    budget: Budget, used: int, *, cut: bool, trace: bool = False, mode: bool = False
) -> JsonObject:
    """``requested_budget``, ``effective_budget``, ``used_budget``, ``budget_policy``, as
    far as they show: all of them under ``trace``; else the request and the policy when
    the budget was clamped, raised or forced, and the effective and used budget when the
    budget ``cut`` something (``budget.shows_usage``) and no mode is on."""
    shows_policy = trace or budgets.shows_policy(budget)
    shows_usage = trace or (cut and not mode)
    out: JsonObject = {}
    if shows_policy:
        out["requested_budget"] = budget.requested
    if shows_usage:
        out["effective_budget"] = budget.effective
        out["used_budget"] = used
    if shows_policy:
        policy = budget.policy
        out["budget_policy"] = {
            "source": policy.source,
            "clamped": policy.clamped,
            "reason": policy.reason,
        }
    return out
