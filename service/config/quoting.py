"""Settings of ``reconstruct``'s quotes and character budget; the names are CPersona 2.6's
(docs/tools.md, "reconstruct: quoting"; docs/tools.md, "reconstruct: budget")."""

from __future__ import annotations

import dataclasses

from service.config.fields import parse_int, setting
from service.errors import ConfigError

_CHARS = parse_int(0, 1_000_000)
_BUDGET = parse_int(1, 10_000_000)


@dataclasses.dataclass(frozen=True)
class QuotingSettings:
    reconstruct_quote_chars: int = setting(800, "CPERSONA_RECONSTRUCT_QUOTE_CHARS", parse=_CHARS)
    """Cap of the first items' head quotes; 0 quotes heads as excerpts (preview cap)."""
    reconstruct_full_quotes: int = setting(5, "CPERSONA_RECONSTRUCT_FULL_QUOTES", parse=_CHARS)
    """How many items, from the first, get ``reconstruct_quote_chars``."""
    reconstruct_tail_quote_chars: int = setting(
        400, "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS", parse=_CHARS
    )
    """Cap of the later items' head quotes (above 0, at most the quote cap)."""
    reconstruct_default_budget: int = setting(
        4000, "CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", parse=_BUDGET
    )
    """Characters of quoted text when the caller names no budget (raised to the window's
    head caps)."""
    reconstruct_max_budget: int = setting(20_000, "CPERSONA_RECONSTRUCT_MAX_BUDGET", parse=_BUDGET)
    """The largest budget a caller or the default reaches."""
    reconstruct_forced_budget: int | None = setting(
        None, "CPERSONA_RECONSTRUCT_FORCED_BUDGET", parse=_BUDGET
    )
    """A budget every call gets, whatever it asks (unset: none)."""


def check_quoting(settings: QuotingSettings, preview_chars: int) -> None:
    """Refuse combinations that break the budget's promises: every budget setting at
    least one preview-tier excerpt and the default and forced ones within the maximum
    (the first item must fit), and a tail cap above 0 and at most the quote cap."""
    floor = preview_chars if preview_chars > 0 else 1
    for name, value in (
        ("CPERSONA_RECONSTRUCT_MAX_BUDGET", settings.reconstruct_max_budget),
        ("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", settings.reconstruct_default_budget),
        ("CPERSONA_RECONSTRUCT_FORCED_BUDGET", settings.reconstruct_forced_budget),
    ):
        if value is not None and value < floor:
            raise ConfigError(f"{name}: must be at least CPERSONA_RECALL_PREVIEW_CHARS ({floor})")
    for name, value in (
        ("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", settings.reconstruct_default_budget),
        ("CPERSONA_RECONSTRUCT_FORCED_BUDGET", settings.reconstruct_forced_budget),
    ):
        if value is not None and value > settings.reconstruct_max_budget:
            raise ConfigError(f"{name}: must not exceed CPERSONA_RECONSTRUCT_MAX_BUDGET")
    quote, tail = settings.reconstruct_quote_chars, settings.reconstruct_tail_quote_chars
    if quote > 0 and not 0 < tail <= quote:
        raise ConfigError(
            "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS: must be above 0 and at most "
            "CPERSONA_RECONSTRUCT_QUOTE_CHARS"
        )
