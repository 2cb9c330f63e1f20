"""The window: how many items a reconstruct returns at most (docs/tools.md,
"reconstruct", count resolution). The library needs it to cut the window; the boundary
reports the policy."""

from __future__ import annotations

import dataclasses
from typing import Literal, TypeAlias

from service.memory.reconstruct.request import DEFAULT_COUNT, MAX_COUNT, PRO_COUNT, Mode

CountSource: TypeAlias = Literal["caller", "server_default", "operator_forced"]
CountReason: TypeAlias = Literal["count_requested", "count_omitted", "forced_count_set"]


@dataclasses.dataclass(frozen=True, slots=True)
class CountPolicy:
    """The resolved window: the caller's ``requested`` value (None when omitted), the
    ``effective`` count, where the base came from, and whether the maximum cut it.
    ``reported`` says the answer should show the policy (a clamp, or a forced value)."""

    requested: int | None
    effective: int
    source: CountSource
    clamped: bool
    reason: CountReason

    @property
    def reported(self) -> bool:
        return self.clamped or self.source == "operator_forced"


def resolve_count(
    requested: int | None,
    mode: Mode | None = None,
    *,
    default: int = DEFAULT_COUNT,
    maximum: int = MAX_COUNT,
    forced: int | None = None,
) -> CountPolicy:
    """``base`` = forced, else the caller's, else the default (negative values are 0);
    ``effective = min(base, maximum)``. Under ``mode: pro`` the default is ``PRO_COUNT``
    and the maximum at least that: the token cap bounds the payload instead."""
    if mode == "pro":
        maximum, default = max(maximum, PRO_COUNT), PRO_COUNT
    source: CountSource
    reason: CountReason
    if forced is not None:
        base, source, reason = forced, "operator_forced", "forced_count_set"
    elif requested is not None:
        base, source, reason = requested, "caller", "count_requested"
    else:
        base, source, reason = default, "server_default", "count_omitted"
    base = max(0, base)
    effective = min(base, maximum)
    return CountPolicy(requested, effective, source, effective < base, reason)
