"""The calibration tools' answers: calibrate_threshold, set_recall_precision,
get_recall_precision (docs/tools.md, "calibrate_threshold"; docs/tools.md, "Tool reference")."""

from __future__ import annotations

from service.memory.calibration import threshold
from service.memory.calibration.records import (
    Calibration,
    PausedCalibration,
    Precision,
    PrecisionSet,
)
from service.models import JsonObject


def calibration(c: Calibration) -> JsonObject:
    """calibrate_threshold's report: the measurement as the library stores it
    (``threshold.report_document``, the separation figures and the fused gate only when
    measured), after whether the sidecar was written."""
    return {"ok": True, "sidecar_persisted": c.persisted, **threshold.report_document(c)}


def paused_calibration(c: PausedCalibration) -> JsonObject:
    """calibrate_threshold's success shape with nothing measured (a persistence pause)."""
    return {
        "ok": True,
        "sidecar_persisted": False,
        "scope": c.scope,
        "agent_id": c.agent_id,
        "sampled_embeddings": 0,
        "num_pairs": 0,
        "method": c.method,
        "z_factor": c.z_factor,
        "percentile": c.percentile,
        "embedding_dim": None,
        "embedding_model": c.embedding_model,
        "distribution": None,
        "null_admit_rate": None,
        "old_threshold": c.old_threshold,
        "new_threshold": None,
    }


def precision_set(outcome: PrecisionSet) -> JsonObject:
    """``{ok, agent_id, precision, beta, cleared, fused_gate, calibrate: {ok, scope,
    new_threshold}}``; ``fused_gate`` and ``calibrate`` are null when nothing ran."""
    change, c = outcome.change, outcome.calibration
    gate = None if c is None or c.fused_gate is None else threshold.gate_document(c.fused_gate)
    calibrate: JsonObject | None = None
    if c is not None:
        calibrate = {"ok": True, "scope": c.scope, "new_threshold": c.stats.threshold}
    return {
        "ok": True,
        "agent_id": outcome.agent_id,
        "precision": change.precision,
        "beta": change.beta,
        "cleared": change.cleared,
        "fused_gate": gate,
        "calibrate": calibrate,
    }


def precision(found: Precision) -> JsonObject:
    """``{ok, agent_id, precision, beta, overridden, global_precision, global_beta}``."""
    return {
        "ok": True,
        "agent_id": found.agent_id,
        "precision": found.precision,
        "beta": found.beta,
        "overridden": found.overridden,
        "global_precision": found.global_precision,
        "global_beta": found.global_beta,
    }
