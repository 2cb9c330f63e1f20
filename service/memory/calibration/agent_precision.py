"""set_recall_precision and get_recall_precision (docs/tools.md, "Tool reference";
docs/tools.md, "Quality gate"; docs/tools.md, "calibrate_threshold").

An agent's precision override is the ``beta`` of its ``recall_calibration`` row. Setting
it recalibrates the agent at once (the gate sits on the separation curve at a fixed
beta, so a new beta means a new gate); the new beta is stored only together with a
successful calibration, so a failed one leaves the previous override in force.
"""

from __future__ import annotations

from service.db import calibration as calibration_queries
from service.errors import Refused
from service.memory.calibration import precision
from service.memory.calibration.params import CalibrationRequest
from service.memory.calibration.records import Precision, PrecisionSet
from service.memory.calibration.threshold import calibrate_threshold
from service.memory.library import Library
from service.models import TenantId


def _echo(agent_id: str, change: precision.PrecisionChange) -> dict[str, object]:
    """The refusal details of a failed recalibration: what was asked for."""
    return {
        "agent_id": agent_id,
        "precision": change.precision,
        "beta": change.beta,
        "cleared": change.cleared,
    }


def _change(lib: Library, precision_name: object, beta: object) -> precision.PrecisionChange:
    name = precision_name if isinstance(precision_name, str) else ""
    change = precision.resolve(lib.settings, name, beta)
    if isinstance(change, str):  # callers check precision.problem first
        raise ValueError(change)
    return change


async def set_recall_precision(
    lib: Library, tenant_id: TenantId, agent_id: str, precision_name: str = "", beta: float = 0
) -> PrecisionSet:
    """Set (or clear) the agent's beta and recalibrate it.

    A failed calibration is Refused with the agent, precision, beta and cleared as
    details, and changes nothing.
    """
    problem = precision.problem(agent_id, precision_name, beta)
    if problem is not None:
        raise Refused(problem)
    change = _change(lib, precision_name, beta)
    try:
        result = await calibrate_threshold(lib, tenant_id, CalibrationRequest(agent_id), change)
    except Refused as exc:
        raise Refused(exc.message, **_echo(agent_id, change)) from None
    return PrecisionSet(agent_id=agent_id, change=change, calibration=result)


def paused_precision_body(
    lib: Library, agent_id: str, precision_name: object, beta: object
) -> PrecisionSet:
    """set_recall_precision with nothing applied (its outcome under a persistence pause,
    after its arguments were validated)."""
    return PrecisionSet(
        agent_id=agent_id, change=_change(lib, precision_name, beta), calibration=None
    )


async def get_recall_precision(lib: Library, tenant_id: TenantId, agent_id: str) -> Precision:
    """The agent's effective beta and whether it is its own override; an agent without a
    row (or that never wrote) reports the deployment default."""
    if not agent_id:
        raise Refused(precision.AGENT_REQUIRED)
    async with lib.db.tenant_tx(tenant_id) as conn:
        rows = await calibration_queries.calibration_state(conn, tenant_id, agent_id)
    override = next((row.beta for row in rows if row.agent_row), None)
    default = precision.global_beta(lib.settings)
    beta = default if override is None else override
    return Precision(
        agent_id=agent_id,
        precision=precision.label(beta),
        beta=beta,
        overridden=override is not None,
        global_precision=precision.label(default),
        global_beta=default,
    )
