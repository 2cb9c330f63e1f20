"""Recall calibration (docs/tools.md, "Quality gate"; docs/tools.md, "calibrate_threshold"): the
vector threshold, the fused gate, precision.

Modules: ``stats`` (pure statistics), ``params`` (calibrate_threshold's arguments),
``precision`` (beta levels, pure), ``simulate`` (the fused gate by simulated recalls),
``threshold`` (calibrate_threshold), ``agent_precision`` (set/get_recall_precision).
All state lives in ``recall_calibration``, per tenant and per agent.
"""

from __future__ import annotations

from service.memory.calibration.agent_precision import (
    get_recall_precision,
    paused_precision_body,
    set_recall_precision,
)
from service.memory.calibration.params import CalibrationRequest, percentile_problem
from service.memory.calibration.precision import problem as precision_problem
from service.memory.calibration.threshold import SCORING_VERSION, calibrate_threshold, paused_body

__all__ = [
    "SCORING_VERSION",
    "CalibrationRequest",
    "calibrate_threshold",
    "get_recall_precision",
    "paused_body",
    "paused_precision_body",
    "percentile_problem",
    "precision_problem",
    "set_recall_precision",
]
