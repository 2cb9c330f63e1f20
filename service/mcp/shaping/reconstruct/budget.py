"""``reconstruct``'s character budget: caps per position, the budget policy, what shows.

The budget counts characters of quoted text (every item's ``content`` plus its
``excerpts[].content``; docs/tools.md, "reconstruct: budget"):

* ``base`` = the operator's forced budget, else the caller's ``budget``, else the mode's
  own default (lite: 2,800), else the configured default (4,000) raised to the sum of the
  head caps over the items (``reason "default_fits_the_window"``; the first five positions
  count 800, later ones 400, so ten items give 6,000; held items count as items).
* ``effective = min(base, max)`` (20,000), then raised to one head quote (800;
  ``reason "raised_to_one_excerpt"``). ``clamped`` says ``effective != base``.
* ``pro`` with no caller or forced budget is uncapped: the budget becomes the whole
  payload sequence (``reason "bounded_by_the_cap"``), and the token cap decides.

The compact answer shows ``requested_budget`` and ``budget_policy`` only when the budget
was clamped, raised or forced (:func:`shows_policy`), and ``effective_budget`` and
``used_budget`` only when the budget cut something (:func:`shows_usage`).
"""

from __future__ import annotations

import dataclasses
from typing import Final, Literal

from service.config import Settings
from service.mcp.shaping.reconstruct import quote
from service.mcp.shaping.reconstruct.records import Record

Mode = Literal["lite", "pro"]
BudgetSource = Literal["caller", "server_default", "operator_forced"]
BudgetReason = Literal[
    "budget_requested",
    "budget_omitted",
    "forced_budget_set",
    "default_fits_the_window",
    "raised_to_one_excerpt",
    "bounded_by_the_cap",
]
LITE_BUDGET: Final = 2800
"""Lite's own default budget (reported as the server's)."""


@dataclasses.dataclass(frozen=True, slots=True)
class QuoteSettings:
    """The operator's quoting and budget settings (``CPERSONA_RECONSTRUCT_*``, and
    ``CPERSONA_RECALL_PREVIEW_CHARS`` as the excerpt cap); service.config validates them.

    ``quote_chars`` 0 turns filled head quotes off: a head is then quoted as an excerpt,
    at ``excerpt_chars``."""

    quote_chars: int = 800
    full_quotes: int = 5
    tail_quote_chars: int = 400
    excerpt_chars: int = 500
    default_budget: int = 4000
    max_budget: int = 20000
    forced_budget: int | None = None

    @classmethod
    def of(cls, settings: Settings) -> QuoteSettings:
        """The quoting settings of the service's validated ``settings``."""
        return cls(
            quote_chars=settings.reconstruct_quote_chars,
            full_quotes=settings.reconstruct_full_quotes,
            tail_quote_chars=settings.reconstruct_tail_quote_chars,
            excerpt_chars=settings.recall_preview_chars,
            default_budget=settings.reconstruct_default_budget,
            max_budget=settings.reconstruct_max_budget,
            forced_budget=settings.reconstruct_forced_budget,
        )

    def head_cap(self, position: int) -> int:
        """The head quote's cap for the item at ``position`` (0 is the first)."""
        if self.quote_chars <= 0:
            return self.excerpt_chars
        return self.quote_chars if position < self.full_quotes else self.tail_quote_chars

    @property
    def floor(self) -> int:
        """The smallest budget: one head quote, so the first item always fits."""
        return max(self.head_cap(0), 1)


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """Where the budget came from (``source``), whether the effective value differs from
    the base (``clamped``), and why it is what it is (``reason``)."""

    source: BudgetSource
    clamped: bool
    reason: BudgetReason


@dataclasses.dataclass(frozen=True, slots=True)
class Budget:
    """A resolved budget: the caller's ``requested`` value (None: omitted), the
    ``effective`` characters (None: uncapped until the sequence is known, see
    :func:`uncapped`) and the policy."""

    requested: int | None
    effective: int | None
    policy: BudgetPolicy


def head_quote(record: Record, query: str, position: int, settings: QuoteSettings) -> quote.Quote:
    """The head quote of the item at ``position``: filled at its cap, or quoted as an
    excerpt when filling is off (``quote_chars`` 0)."""
    if settings.quote_chars <= 0:
        return quote.excerpt_quote(record, query, settings.excerpt_chars)
    return quote.head_quote(record, query, settings.head_cap(position))


def resolve(
    requested: int | None, items: int, settings: QuoteSettings, mode: Mode | None = None
) -> Budget:
    """The budget for a window of ``items`` items (``effective_count`` plus held items).

    ``requested`` is the caller's ``budget`` (schema minimum 1) or None."""
    base: int
    source: BudgetSource
    reason: BudgetReason
    if settings.forced_budget is not None:
        base, source, reason = settings.forced_budget, "operator_forced", "forced_budget_set"
    elif requested is not None:
        base, source, reason = requested, "caller", "budget_requested"
    elif mode == "pro":
        return Budget(None, None, BudgetPolicy("server_default", False, "bounded_by_the_cap"))
    elif mode == "lite":
        base, source, reason = LITE_BUDGET, "server_default", "budget_omitted"
    else:
        base, source, reason = settings.default_budget, "server_default", "budget_omitted"
        heads = sum(settings.head_cap(position) for position in range(max(items, 0)))
        if heads > base:
            base, reason = heads, "default_fits_the_window"
    effective = min(base, settings.max_budget)
    if effective < settings.floor:
        effective, reason = settings.floor, "raised_to_one_excerpt"
    return Budget(requested, effective, BudgetPolicy(source, effective != base, reason))


def uncapped(budget: Budget, sequence_chars: int) -> Budget:
    """An uncapped budget made the whole payload sequence (``sequence_chars``)."""
    if budget.effective is not None:
        return budget
    return dataclasses.replace(budget, effective=sequence_chars)


def shows_policy(budget: Budget) -> bool:
    """Whether the compact answer carries ``requested_budget`` and ``budget_policy``:
    the budget was clamped or raised, or an operator forced it."""
    return budget.policy.clamped or budget.policy.source == "operator_forced"


def shows_usage(budget_exhausted: bool, reserved_omitted: int, excerpts_omitted: int) -> bool:
    """Whether the compact answer carries ``effective_budget`` and ``used_budget``: the
    budget cut something (a window item, a held item or an excerpt). Never under a mode."""
    return budget_exhausted or reserved_omitted > 0 or excerpts_omitted > 0
