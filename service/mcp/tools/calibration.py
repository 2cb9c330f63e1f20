"""Recall calibration tools: calibrate_threshold, set_recall_precision, get_recall_precision.

Both writers validate their arguments before the persistence-pause check (spec §10.5):
a bad percentile or precision name is refused whether or not writes are paused; valid
calls under a pause get their success shape with nothing measured or applied.
"""

from __future__ import annotations

from service.mcp.registry import PausePolicy, ToolEnv, ToolSpec, obj, on_agent
from service.mcp.schemas import AGENT_ID
from service.memory import calibration
from service.models import JsonObject

METHODS = ["separation", "percentile", "zscore"]


def _request(args: JsonObject) -> calibration.CalibrationRequest:
    return calibration.CalibrationRequest(
        agent_id=args["agent_id"],
        sample_size=args["sample_size"],
        z_factor=args["z_factor"],
        method=args.get("method", ""),
        percentile=args["percentile"],
    )


async def _calibrate(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await calibration.calibrate_threshold(env.lib, env.caller.tenant_id, _request(args))


async def _calibrate_paused(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await calibration.paused_body(env.lib, env.caller.tenant_id, _request(args))


def _calibrate_problem(args: JsonObject) -> str | None:
    return calibration.percentile_problem(args["percentile"])


CALIBRATE_THRESHOLD = ToolSpec(
    name="calibrate_threshold",
    description="""Re-derive how similar a memory must be to a query to be recalled, from
the stored memories themselves, and store it for every later recall.

Samples embedded memories of the agent (agent_id "" = all agents of your tenant, giving
the tenant-wide default) and compares random pairs (unrelated) with same-session
neighbours (related). For an agent it also calibrates the quality gate of fused recall
at the agent's precision (see set_recall_precision). Needs at least 10 embedded
memories. Usually leave every other argument at its default. Returns {ok, scope,
sampled_embeddings, old_threshold, new_threshold, distribution, fused_gate?, ...}.""",
    input_schema=obj(
        {
            "agent_id": {
                **AGENT_ID,
                "description": 'Agent to calibrate; "" calibrates your tenant\'s default.',
            },
            "sample_size": {
                "type": "integer",
                "default": 0,
                "description": "Memories to sample (0 = 200; clamped to 1..2000).",
            },
            "z_factor": {
                "type": "number",
                "default": 0,
                "description": "zscore method: threshold = mean + z*std (0 = 1.0; -10..10).",
            },
            "method": {
                "type": "string",
                "enum": METHODS,
                "description": "separation (default), percentile or zscore. Omit for the default.",
            },
            "percentile": {
                "type": "number",
                "default": 0,
                "description": "percentile method: quantile in (0, 1] or a percent 1-100 "
                "(0 = 0.95).",
            },
        },
        ["agent_id"],
    ),
    handler=_calibrate,
    demands=on_agent("agent_id", "read-write"),
    idempotent=False,
    pause=PausePolicy(body=_calibrate_paused, validate=_calibrate_problem),
)


async def _set_precision(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await calibration.set_recall_precision(
        env.lib,
        env.caller.tenant_id,
        args["agent_id"],
        args["precision"],
        args["beta"],
    )


def _precision_paused(env: ToolEnv, args: JsonObject) -> JsonObject:
    return calibration.paused_precision_body(
        env.lib, args["agent_id"], args["precision"], args["beta"]
    )


def _precision_problem(args: JsonObject) -> str | None:
    return calibration.precision_problem(args.get("agent_id"), args["precision"], args["beta"])


SET_RECALL_PRECISION = ToolSpec(
    name="set_recall_precision",
    description="""Choose how picky recall is for one agent, then recalibrate it.

precision: "strict" (fewer but surer matches), "balanced" (the default) or "lenient"
(more matches, more noise); or a raw beta > 0 (strict = 2.0, balanced = 1.0,
lenient = 0.5). Empty precision with beta 0 clears the agent's choice (back to the
deployment default). Needs at least 10 embedded memories of the agent; on failure
nothing changes. Returns {ok, agent_id, precision, beta, cleared, fused_gate,
calibrate: {ok, scope, new_threshold}}.""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "precision": {
                "type": "string",
                "default": "",
                "description": 'strict, balanced or lenient; "" with beta 0 clears.',
            },
            "beta": {
                "type": "number",
                "default": 0,
                "description": "Raw precision weight; > 0 overrides precision.",
            },
        },
        ["agent_id"],
    ),
    handler=_set_precision,
    demands=on_agent("agent_id", "read-write"),
    pause=PausePolicy(body=_precision_paused, validate=_precision_problem),
)


async def _get_precision(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await calibration.get_recall_precision(env.lib, env.caller.tenant_id, args["agent_id"])


GET_RECALL_PRECISION = ToolSpec(
    name="get_recall_precision",
    description="""Read an agent's recall precision: {ok, agent_id, precision, beta,
overridden, global_precision, global_beta}. overridden: false means the agent uses the
deployment default (global_*).""",
    input_schema=obj({"agent_id": AGENT_ID}, ["agent_id"]),
    handler=_get_precision,
    demands=on_agent("agent_id", "read"),
    read_only=True,
)

TOOLS = [CALIBRATE_THRESHOLD, SET_RECALL_PRECISION, GET_RECALL_PRECISION]
