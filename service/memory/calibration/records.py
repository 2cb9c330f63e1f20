"""What the calibration tools answer, as records (docs/tools.md, "calibrate_threshold";
docs/tools.md, "Quality gate").

The boundary renders them (``service.mcp.render.calibration``); the library never
spells a wire key. ``FusedGate`` (the fused gate's draw) lives with the statistics that
produce it, ``stats``.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from service.memory.calibration.precision import PrecisionChange
from service.memory.calibration.stats import FusedGate, ThresholdStats

__all__ = [
    "Calibration",
    "FusedGate",
    "PausedCalibration",
    "Precision",
    "PrecisionSet",
    "Scope",
]

Scope = Literal["per_agent", "global"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """A measured calibration: the sample, the parameters it ran with, the distribution
    and threshold it gave (``stats``), the threshold it replaces, and the agent's fused
    gate (None: no agent, gate off, too little data or a failed simulation).
    ``proxy_source`` names the separation method's positives (None for the others)."""

    persisted: bool
    agent_id: str
    sampled_embeddings: int
    num_pairs: int
    method: str
    z_factor: float
    percentile: float
    embedding_dim: int
    embedding_model: str | None
    stats: ThresholdStats
    old_threshold: float
    proxy_source: str | None
    fused_gate: FusedGate | None

    @property
    def scope(self) -> Scope:
        return "per_agent" if self.agent_id else "global"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PausedCalibration:
    """calibrate_threshold under a persistence pause: nothing measured or stored, the
    resolved parameters (None when they do not resolve) and the threshold in force."""

    agent_id: str
    method: str | None
    z_factor: float | None
    percentile: float | None
    embedding_model: str | None
    old_threshold: float

    @property
    def scope(self) -> Scope:
        return "per_agent" if self.agent_id else "global"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionSet:
    """set_recall_precision's outcome: the change applied to ``agent_id`` and the
    calibration it ran (None under a persistence pause: nothing applied)."""

    agent_id: str
    change: PrecisionChange
    calibration: Calibration | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Precision:
    """An agent's effective precision (its override, else the deployment default) and
    the deployment default's."""

    agent_id: str
    precision: str
    beta: float
    overridden: bool
    global_precision: str
    global_beta: float
