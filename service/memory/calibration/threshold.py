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

import dataclasses
from dataclasses import dataclass
from typing import Final

from service.db import calibration as calibration_queries
from service.db.pool import Connection
from service.errors import Refused
from service.logs import get_logger
from service.memory.calibration import precision, simulate
from service.memory.calibration.params import CalibrationRequest, Params, resolve
from service.memory.calibration.records import Calibration, PausedCalibration
from service.memory.calibration.stats import FusedGate, ThresholdStats, threshold_from_sims
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
) -> FusedGate | None:
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


def _calibration(
    req: CalibrationRequest,
    p: Params,
    m: _Measured,
    old: float,
    model: str | None,
    gate: FusedGate | None,
) -> Calibration:
    return Calibration(
        persisted=False,
        agent_id=req.agent_id,
        sampled_embeddings=len(m.sample.ids),
        num_pairs=m.num_pairs,
        method=p.method,
        z_factor=p.z_factor,
        percentile=p.percentile,
        embedding_dim=m.dim,
        embedding_model=model,
        stats=m.stats,
        old_threshold=old,
        proxy_source=m.proxy_source,
        fused_gate=gate,
    )


def gate_document(gate: FusedGate) -> JsonObject:
    """The fused gate as reported and stored; ``threshold_draws`` only when several draws
    ran."""
    document: JsonObject = {
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
        document["threshold_draws"] = list(gate.threshold_draws)
    return document


def report_document(c: Calibration) -> JsonObject:
    """The audit document stored in ``recall_calibration.report`` (a jsonb column, read by
    operators, not by the service): the measurement as the tool reported it."""
    s = c.stats
    document: JsonObject = {
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
        document["proxy_source"] = c.proxy_source
    if s.youden_j is not None:
        document["youden_j"] = s.youden_j
    if s.pos_admit_rate is not None:
        document["pos_admit_rate"] = s.pos_admit_rate
        document["pos_mean"] = s.pos_mean
    if c.fused_gate is not None:
        document["fused_gate"] = gate_document(c.fused_gate)
    return document


async def calibrate_threshold(
    lib: Library,
    tenant_id: TenantId,
    req: CalibrationRequest,
    change: precision.PrecisionChange | None = None,
) -> Calibration:
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
    old = current_threshold(lib, rows, agent)
    result = _calibration(req, params, measured, old, model, gate)
    record = _record(measured, gate, change, model, report_document(result))
    async with lib.db.tenant_tx(tenant_id) as conn:
        saved = await calibration_queries.save_calibration(conn, tenant_id, agent, record)
    log.info(
        "recall_calibrated",
        scope=result.scope,
        sampled=result.sampled_embeddings,
        old_threshold=old,
        new_threshold=measured.stats.threshold,
        fused_gate=None if gate is None else gate.threshold,
        stored=saved,
    )
    return dataclasses.replace(result, persisted=saved)


def _record(
    m: _Measured,
    gate: FusedGate | None,
    change: precision.PrecisionChange | None,
    model: str | None,
    report: JsonObject,
) -> calibration_queries.Calibration:
    """What the calibration stores; the beta only when set_recall_precision changes it."""
    return calibration_queries.Calibration(
        vector_threshold=m.stats.threshold,
        fused_gate=None if gate is None else gate.threshold,
        fused_gate_signal=None if gate is None else gate.signal,
        set_beta=change is not None,
        beta=None if change is None else change.override,
        precision_label=None if change is None or change.cleared else change.precision,
        embedding_model=model,
        embedding_dim=m.dim,
        scoring_version=SCORING_VERSION,
        report=report,
    )


async def paused_body(
    lib: Library, tenant_id: TenantId, req: CalibrationRequest
) -> PausedCalibration:
    """Nothing measured: calibrate_threshold under a persistence pause (docs/tools.md,
    "pause_persistence"), after its arguments were validated."""
    params = resolve(lib.settings, req)
    agent = req.agent_id or None
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await calibration_queries.calibration_state(conn, tenant_id, agent)
    resolved = None if isinstance(params, str) else params
    return PausedCalibration(
        agent_id=req.agent_id,
        method=None if resolved is None else resolved.method,
        z_factor=None if resolved is None else resolved.z_factor,
        percentile=None if resolved is None else resolved.percentile,
        embedding_model=None if lib.embedder is None else lib.embedder.name,
        old_threshold=current_threshold(lib, rows, agent),
    )
