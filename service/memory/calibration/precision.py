"""Recall precision: the beta (specificity weight) the fused gate is calibrated at.

strict 2.0, balanced 1.0, lenient 0.5 (docs/tools.md, "Quality gate";
docs/tools.md, "calibrate_threshold"). The deployment default is ``CPERSONA_FUSED_GATE_BETA`` or
else the beta of ``CPERSONA_RECALL_PRECISION``; an agent's override is ``recall_calibration.beta``
of its row (NULL = no override). Pure functions: resolving what ``set_recall_precision`` asked for,
naming a beta.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from service.config import Settings

PRECISION_BETA: Final = {"strict": 2.0, "balanced": 1.0, "lenient": 0.5}
UNKNOWN_PRECISION = "Unknown precision '{}'; expected strict / balanced / lenient"
AGENT_REQUIRED = "agent_id is required"


def label(beta: float) -> str:
    """The named level of ``beta``, or ``custom`` for any other value."""
    for name, value in PRECISION_BETA.items():
        if value == beta:
            return name
    return "custom"


def global_beta(settings: Settings) -> float:
    """The beta of agents without an override."""
    if settings.fused_gate_beta is not None:
        return settings.fused_gate_beta
    return PRECISION_BETA[settings.recall_precision]


@dataclass(frozen=True, slots=True)
class PrecisionChange:
    """What set_recall_precision applies: ``override`` None clears the agent's override;
    ``beta`` and ``precision`` are what the answer reports."""

    override: float | None
    beta: float
    precision: str

    @property
    def cleared(self) -> bool:
        return self.override is None


def _positive(beta: object) -> float | None:
    if isinstance(beta, bool) or not isinstance(beta, int | float):
        return None
    value = float(beta)
    return value if math.isfinite(value) and value > 0 else None


def resolve(settings: Settings, precision: str, beta: object) -> PrecisionChange | str:
    """The change asked for, or the refusal text for an unknown precision name.

    A positive ``beta`` wins (named after its value: 2.0 is ``strict``, 0.7 is
    ``custom``); else a precision name, case-insensitive; else (empty name, beta <= 0)
    the override is cleared and the agent reports the deployment default as
    ``precision: "default"``.
    """
    raw = _positive(beta)
    if raw is not None:
        return PrecisionChange(raw, raw, label(raw))
    if precision:
        level = precision.lower()
        if level not in PRECISION_BETA:
            return UNKNOWN_PRECISION.format(precision)
        return PrecisionChange(PRECISION_BETA[level], PRECISION_BETA[level], level)
    return PrecisionChange(None, global_beta(settings), "default")


def problem(agent_id: object, precision: object, beta: object) -> str | None:
    """Why set_recall_precision must refuse these arguments before doing anything, or None.

    Runs before the persistence-pause check (docs/tools.md, "pause_persistence"): bad input fails
    even while writes are paused. Needs no settings: only clearing reads them, and it never fails.
    """
    if not isinstance(agent_id, str) or not agent_id:
        return AGENT_REQUIRED
    name = precision if isinstance(precision, str) else ""
    if _positive(beta) is None and name and name.lower() not in PRECISION_BETA:
        return UNKNOWN_PRECISION.format(name)
    return None
