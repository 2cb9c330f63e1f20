"""Recall calibration tools: calibrate_threshold, set_recall_precision, get_recall_precision.

Both writers validate their arguments before the persistence-pause check
(docs/tools.md, "pause_persistence"): a bad percentile or precision name is refused whether or not
writes are paused; valid calls under a pause get their success shape with nothing measured or
applied.
"""

from __future__ import annotations

import dataclasses

from service.mcp.registry import PausePolicy, ToolEnv, ToolSpec, obj, on_agent
from service.mcp.render import calibration as render
from service.mcp.schemas import AGENT_ID, name
from service.memory import calibration
from service.models import JsonObject

METHODS = ["separation", "percentile", "zscore"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CalibrateParams:
    agent_id: str
    sample_size: int
    z_factor: float
    method: str = ""  # '' = the agent's configured method
    percentile: float


def _request(params: CalibrateParams) -> calibration.CalibrationRequest:
    return calibration.CalibrationRequest(
        agent_id=params.agent_id,
        sample_size=params.sample_size,
        z_factor=params.z_factor,
        method=params.method,
        percentile=params.percentile,
    )


async def _calibrate(env: ToolEnv, params: CalibrateParams) -> JsonObject:
    return render.calibration(
        await calibration.calibrate_threshold(env.lib, env.caller.tenant_id, _request(params))
    )


async def _calibrate_paused(env: ToolEnv, params: CalibrateParams) -> JsonObject:
    return render.paused_calibration(
        await calibration.paused_body(env.lib, env.caller.tenant_id, _request(params))
    )


def _calibrate_problem(params: CalibrateParams) -> str | None:
    return calibration.percentile_problem(params.percentile)


CALIBRATE_THRESHOLD = ToolSpec(
    name="calibrate_threshold",
    description="""Re-derive an agent's recall similarity threshold from its embedded
memories (needs 10). Returns {ok, new_threshold}.""",
    input_schema=obj(
        {
            "agent_id": {**AGENT_ID, "description": "'' = tenant default"},
            "sample_size": {
                "type": "integer",
                "default": 0,
            },
            "z_factor": {
                "type": "number",
                "default": 0,
            },
            "method": {
                "type": "string",
                "enum": METHODS,
            },
            "percentile": {
                "type": "number",
                "default": 0,
            },
        },
        ["agent_id"],
    ),
    params=CalibrateParams,
    handler=_calibrate,
    demands=on_agent("agent_id", "read-write"),
    pause=PausePolicy(body=_calibrate_paused, validate=_calibrate_problem),
    destructive=False,
    idempotent=False,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SetPrecisionParams:
    agent_id: str
    precision: str
    beta: float


async def _set_precision(env: ToolEnv, params: SetPrecisionParams) -> JsonObject:
    outcome = await calibration.set_recall_precision(
        env.lib,
        env.caller.tenant_id,
        params.agent_id,
        params.precision,
        params.beta,
    )
    return render.precision_set(outcome)


def _precision_paused(env: ToolEnv, params: SetPrecisionParams) -> JsonObject:
    return render.precision_set(
        calibration.paused_precision_body(env.lib, params.agent_id, params.precision, params.beta)
    )


def _precision_problem(params: SetPrecisionParams) -> str | None:
    return calibration.precision_problem(params.agent_id, params.precision, params.beta)


SET_RECALL_PRECISION = ToolSpec(
    name="set_recall_precision",
    description="""Set how picky an agent's recall is ("" and 0 clear), then
recalibrate (needs 10 embedded memories). Returns {ok, precision, beta}.""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "precision": name(default="", description="strict, balanced or lenient"),
            "beta": {
                "type": "number",
                "default": 0,
                "description": "> 0 overrides precision",
            },
        },
        ["agent_id"],
    ),
    params=SetPrecisionParams,
    handler=_set_precision,
    demands=on_agent("agent_id", "read-write"),
    pause=PausePolicy(body=_precision_paused, validate=_precision_problem),
    destructive=False,
    idempotent=False,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GetPrecisionParams:
    agent_id: str


async def _get_precision(env: ToolEnv, params: GetPrecisionParams) -> JsonObject:
    return render.precision(
        await calibration.get_recall_precision(env.lib, env.caller.tenant_id, params.agent_id)
    )


GET_RECALL_PRECISION = ToolSpec(
    name="get_recall_precision",
    description="""An agent's recall precision: {ok, precision, beta, overridden}.""",
    input_schema=obj({"agent_id": AGENT_ID}, ["agent_id"]),
    params=GetPrecisionParams,
    handler=_get_precision,
    demands=on_agent("agent_id", "read"),
    read_only=True,
)

TOOLS = [CALIBRATE_THRESHOLD, SET_RECALL_PRECISION, GET_RECALL_PRECISION]
