"""calibrate_threshold (docs/tools.md, "calibrate_threshold") in its hosted form.

Draws a random sample of the tenant's (or one agent's) embedded memories, builds the
null distribution of all pairwise similarities and, for the ``separation`` method, a
positive proxy (consecutive same-session memories, else nearest neighbours), derives
the vector threshold, calibrates the agent's fused gate by simulation, and stores the
result in ``recall_calibration`` (the tenant's row for ``agent_id`` '', the agent's
row otherwise), where every replica's recall reads it. Nothing is kept in process
memory or files. An agent row goes with its agent (``delete_agent_data`` deletes the
agent; the foreign key cascades).

Three short steps: read (sample, positives), simulate (its own read transaction, so
a failure there only costs the fused gate), write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from service.db import calibration as calibration_queries
from service.db.pool import Connection
from service.errors import Refused
from service.logs import get_logger
from service.memory.calibration import precision, simulate
from service.memory.calibration.params import CalibrationRequest, Params, resolve
from service.memory.calibration.stats import ThresholdStats, threshold_from_sims
from service.memory.library import Library
from service.models import JsonObject, TenantId

log = get_logger(__name__)

SCORING_VERSION: Final = "255a3-episode-penalty-exempt"
"""Fingerprint of the scoring maths a stored calibration was measured with (CPersona's
value for 2.5.5a3 scoring, which deep_check's calibration_staleness compares against);
bump both when the gate scores change meaning, so a stored gate is recognisably stale."""
MIN_EMBEDDINGS: Final = 10
MIN_ADJACENT_PAIRS: Final = 10


def _row(
    rows: list[calibration_queries.CalibrationRow], agent_row: bool
) -> calibration_queries.CalibrationRow | None:
    return next((row for row in rows if row.agent_row is agent_row), None)


def current_threshold(
    lib: Library, rows: list[calibration_queries.CalibrationRow], agent: str | None
) -> float:
    """The vector threshold recall applies now: the agent's, else the tenant's, else the
    configured ``CPERSONA_VECTOR_MIN_SIMILARITY``."""
    for row in (_row(rows, True) if agent else None, _row(rows, False)):
        if row is not None and row.vector_threshold is not None:
            return row.vector_threshold
    return lib.settings.vector_min_similarity


def agent_beta(lib: Library, rows: list[calibration_queries.CalibrationRow]) -> float:
    """The agent's precision override, else the deployment default."""
    row = _row(rows, True)
    if row is not None and row.beta is not None:
        return row.beta
    return precision.global_beta(lib.settings)


@dataclass(frozen=True, slots=True)
class _Measured:
    sample: calibration_queries.Sample
    dim: int
    num_pairs: int
    stats: ThresholdStats
    proxy_source: str | None


async def _positives(
    lib: Library,
    conn: Connection,
    tenant_id: TenantId,
    agent: str | None,
    sample: calibration_queries.Sample,
    dim: int,
    size: int,
) -> tuple[list[float], str]:
    """Same-session neighbours when there are enough, else every row's nearest neighbour
    (an over-estimate of relatedness, so the threshold trends high: only a fallback)."""
    window = lib.settings.calibrate_temporal_window_min
    adjacent = await calibration_queries.calibration_adjacent_sims(
        conn, tenant_id, agent, dim, size, window
    )
    if len(adjacent) >= MIN_ADJACENT_PAIRS:
        return sorted(adjacent), "temporal"
    nearest = await calibration_queries.calibration_nearest_sims(conn, tenant_id, sample.ids)
    return sorted(nearest), "nn_fallback"


async def _measure(
    lib: Library, conn: Connection, tenant_id: TenantId, agent: str | None, p: Params
) -> _Measured | str:
    """The sample and the threshold it gives, or the refusal text when it is too small."""
    sample = await calibration_queries.calibration_sample(conn, tenant_id, agent, p.sample_n)
    if sample.drawn < MIN_EMBEDDINGS:
        return f"Need at least {MIN_EMBEDDINGS} embeddings, found {sample.drawn}"
    if len(sample.ids) < MIN_EMBEDDINGS or sample.dim is None:
        return f"Need at least {MIN_EMBEDDINGS} same-dimension embeddings, found {len(sample.ids)}"
    null = await calibration_queries.calibration_pair_sims(conn, tenant_id, sample.ids)
    positives: list[float] | None = None
    proxy: str | None = None
    if p.method == "separation":
        positives, proxy = await _positives(
            lib, conn, tenant_id, agent, sample, sample.dim, p.sample_n
        )
    stats = threshold_from_sims(
        null,
        method=p.method,
        z_factor=p.z_factor,
        percentile=p.percentile,
        floor=lib.settings.calibrate_floor,
        positives=positives,
    )
    return _Measured(sample, sample.dim, len(null), stats, proxy)


async def _fused_gate(
    lib: Library, tenant_id: TenantId, agent: str | None, m: _Measured, beta: float
) -> JsonObject | None:
    """The agent's fused gate, or None (no agent, gate disabled, no data, or a failure:
    the vector threshold just measured must not be lost to a flaky simulation)."""
    if agent is None or not lib.settings.fused_gate_enabled or lib.embedder is None:
        return None
    dim = lib.embedder.dimension or m.dim
    try:
        return await simulate.calibrate_gate(lib, tenant_id, agent, dim, beta, m.stats.threshold)
    except Exception:
        log.warning("fused_gate_calibration_failed", exc_info=True)
        return None


def _model(lib: Library, m: _Measured) -> str | None:
    if m.sample.model is not None:
        return m.sample.model
    return None if lib.embedder is None else lib.embedder.name


def _report(
    req: CalibrationRequest, p: Params, m: _Measured, old: float, model: str | None
) -> JsonObject:
    s = m.stats
    body: JsonObject = {
        "scope": "per_agent" if req.agent_id else "global",
        "agent_id": req.agent_id,
        "sampled_embeddings": len(m.sample.ids),
        "num_pairs": m.num_pairs,
        "method": p.method,
        "z_factor": p.z_factor,
        "percentile": p.percentile,
        "embedding_dim": m.dim,
        "embedding_model": model,
        "distribution": {"mean": s.mean, "std": s.std, "median": s.median, "p95": s.p95},
        "null_admit_rate": s.null_admit_rate,
        "old_threshold": old,
        "new_threshold": s.threshold,
    }
    if m.proxy_source is not None:
        body["proxy_source"] = m.proxy_source
    if s.youden_j is not None:
        body["youden_j"] = s.youden_j
    if s.pos_admit_rate is not None:
        body["pos_admit_rate"] = s.pos_admit_rate
        body["pos_mean"] = s.pos_mean
    return body


async def calibrate_threshold(
    lib: Library,
    tenant_id: TenantId,
    req: CalibrationRequest,
    change: precision.PrecisionChange | None = None,
) -> JsonObject:
    """Calibrate and store the vector threshold (and an agent's fused gate).

    ``change`` is set_recall_precision's new beta: the gate is calibrated at it and it
    is stored together with the result, so a calibration that fails never leaves the
    new beta behind (the "rollback" of docs/tools.md, "calibrate_threshold", by construction).
    Refused when the parameters are invalid or too few memories are embedded.
    """
    params = resolve(lib.settings, req)
    if isinstance(params, str):
        raise Refused(params)
    agent = req.agent_id or None
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await calibration_queries.calibration_state(conn, tenant_id, agent)
        measured = await _measure(lib, conn, tenant_id, agent, params)
    if isinstance(measured, str):
        raise Refused(measured)
    beta = agent_beta(lib, rows) if change is None else change.beta
    gate = await _fused_gate(lib, tenant_id, agent, measured, beta)
    model = _model(lib, measured)
    report = _report(req, params, measured, current_threshold(lib, rows, agent), model)
    if gate is not None:
        report["fused_gate"] = gate
    record = _record(measured, gate, change, model, report)
    async with lib.db.tenant_tx(tenant_id) as conn:
        saved = await calibration_queries.save_calibration(conn, tenant_id, agent, record)
    log.info(
        "recall_calibrated",
        scope=report["scope"],
        sampled=report["sampled_embeddings"],
        old_threshold=report["old_threshold"],
        new_threshold=report["new_threshold"],
        fused_gate=None if gate is None else gate["threshold"],
        stored=saved,
    )
    return {"ok": True, "sidecar_persisted": saved, **report}


def _record(
    m: _Measured,
    gate: JsonObject | None,
    change: precision.PrecisionChange | None,
    model: str | None,
    report: JsonObject,
) -> calibration_queries.Calibration:
    """What the calibration stores; the beta only when set_recall_precision changes it."""
    return calibration_queries.Calibration(
        vector_threshold=m.stats.threshold,
        fused_gate=None if gate is None else float(gate["threshold"]),
        fused_gate_signal=None if gate is None else str(gate["signal"]),
        set_beta=change is not None,
        beta=None if change is None else change.override,
        precision_label=None if change is None or change.cleared else change.precision,
        embedding_model=model,
        embedding_dim=m.dim,
        scoring_version=SCORING_VERSION,
        report=report,
    )


async def paused_body(lib: Library, tenant_id: TenantId, req: CalibrationRequest) -> JsonObject:
    """The success shape with nothing measured: calibrate_threshold's answer under a
    persistence pause (docs/tools.md, "pause_persistence"), after its arguments were validated."""
    params = resolve(lib.settings, req)
    agent = req.agent_id or None
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await calibration_queries.calibration_state(conn, tenant_id, agent)
    return {
        "ok": True,
        "sidecar_persisted": False,
        "scope": "per_agent" if agent else "global",
        "agent_id": req.agent_id,
        "sampled_embeddings": 0,
        "num_pairs": 0,
        "method": None if isinstance(params, str) else params.method,
        "z_factor": None if isinstance(params, str) else params.z_factor,
        "percentile": None if isinstance(params, str) else params.percentile,
        "embedding_dim": None,
        "embedding_model": None if lib.embedder is None else lib.embedder.name,
        "distribution": None,
        "null_admit_rate": None,
        "old_threshold": current_threshold(lib, rows, agent),
        "new_threshold": None,
    }
