"""The calibration tools' answers: calibrate_threshold, set_recall_precision,
get_recall_precision (docs/tools.md, "calibrate_threshold"; docs/tools.md, "Tool reference")."""

from __future__ import annotations

from service.memory.calibration.records import (
    Calibration,
    FusedGate,
    PausedCalibration,
    Precision,
    PrecisionSet,
)
from service.models import JsonObject


def fused_gate(gate: FusedGate) -> JsonObject:
    """The ``fused_gate`` object; ``threshold_draws`` only when several draws ran."""
    body: JsonObject = {
        "threshold": gate.threshold,
        "signal": gate.signal,
        "beta": gate.beta,
        "youden_j": gate.youden_j,
        "queries_run": gate.queries_run,
        "n_null": gate.n_null,
        "n_pos": gate.n_pos,
        "null_admit_rate": gate.null_admit_rate,
        "pos_admit_rate": gate.pos_admit_rate,
        "null_mean": gate.null_mean,
        "pos_mean": gate.pos_mean,
    }
    if gate.threshold_draws is not None:
        body["threshold_draws"] = list(gate.threshold_draws)
    return body


def calibration(c: Calibration) -> JsonObject:
    """calibrate_threshold's report; the separation figures and the fused gate only when
    measured."""
    s = c.stats
    body: JsonObject = {
        "ok": True,
        "sidecar_persisted": c.persisted,
        "scope": c.scope,
        "agent_id": c.agent_id,
        "sampled_embeddings": c.sampled_embeddings,
        "num_pairs": c.num_pairs,
        "method": c.method,
        "z_factor": c.z_factor,
        "percentile": c.percentile,
        "embedding_dim": c.embedding_dim,
        "embedding_model": c.embedding_model,
        "distribution": {"mean": s.mean, "std": s.std, "median": s.median, "p95": s.p95},
        "null_admit_rate": s.null_admit_rate,
        "old_threshold": c.old_threshold,
        "new_threshold": s.threshold,
    }
    if c.proxy_source is not None:
        body["proxy_source"] = c.proxy_source
    if s.youden_j is not None:
        body["youden_j"] = s.youden_j
    if s.pos_admit_rate is not None:
        body["pos_admit_rate"] = s.pos_admit_rate
        body["pos_mean"] = s.pos_mean
    if c.fused_gate is not None:
        body["fused_gate"] = fused_gate(c.fused_gate)
    return body


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
    gate = None if c is None or c.fused_gate is None else fused_gate(c.fused_gate)
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
