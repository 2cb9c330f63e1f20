"""reconstruct: recall items with quotes and provenance (docs/tools.md, "reconstruct")."""

from __future__ import annotations

import dataclasses

from service.errors import InvalidInput
from service.mcp.registry import ToolEnv, ToolSpec, informing, obj, on_agent, refuse_with
from service.mcp.render import reconstruct as render
from service.mcp.schemas import AGENT_ID, CHANNEL, PROJECT_ID, identifier, string
from service.mcp.tools.recall import TIME_CUE
from service.memory import bounds
from service.memory.recall import cue
from service.memory.reconstruct import pipeline, request
from service.models import JsonObject

BOTH_MODES = 'pass mode or lite, not both: lite=true is mode "lite"'


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ReconstructParams:
    agent_id: str
    query: str
    count: int | None = None
    top_k: int | None = None
    max_hops: int | None = None
    max_evidence: int | None = None
    deep: bool
    channel: str
    project_id: str | None = None
    source_id: str
    trace: bool
    budget: int | None = None
    mode: str | None = None  # the schema's enum: "lite" or "pro"
    lite: bool
    time_cue: JsonObject | None = None


async def _reconstruct(env: ToolEnv, params: ReconstructParams) -> JsonObject:
    if params.lite and params.mode is not None:
        raise InvalidInput(BOTH_MODES)
    req = request.ReconstructRequest(
        agent_id=params.agent_id,
        query=params.query,
        count=params.count,
        top_k=params.top_k,
        max_hops=params.max_hops,
        max_evidence=params.max_evidence,
        deep=params.deep,
        channel=params.channel,
        project_id=params.project_id,
        source_id=params.source_id,
        mode=_mode(params),
        trace=params.trace,
        paused=env.paused,
        time_cue=None if params.time_cue is None else cue.parse(params.time_cue),
    )
    result = await pipeline.reconstruct(env.lib, env.caller.tenant_id, req)
    return render.answer(result, params.budget, params.trace, env.lib.settings, env.notes)


def _mode(params: ReconstructParams) -> request.Mode | None:
    """``lite: true`` is ``mode: lite``; the schema admits no other mode."""
    if params.lite or params.mode == "lite":
        return "lite"
    return "pro" if params.mode == "pro" else None


def _credits_statistics(env: ToolEnv, params: ReconstructParams) -> bool:
    """As recall: only confidence scoring writes (recall statistics), which a pause stops."""
    return env.lib.settings.confidence_enabled


RECONSTRUCT = ToolSpec(
    name="reconstruct",
    description="""Answer from memory: items best first, each quoting a record (content,
head_ref) with its claims newest first (ref, as_of, why, roles).""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "query": string(bounds.QUERY_CHARS, description="'' = most recent"),
            "count": {"type": "integer", "minimum": 0},
            "top_k": {"type": "integer", "minimum": 1, "maximum": request.MAX_TOP_K},
            "max_hops": {"type": "integer", "minimum": 0, "maximum": request.MAX_HOPS},
            "max_evidence": {"type": "integer", "minimum": 1, "maximum": request.MAX_EVIDENCE},
            "deep": {"type": "boolean", "default": False},
            "channel": CHANNEL,
            "project_id": PROJECT_ID,
            "source_id": identifier(default=""),
            "trace": {"type": "boolean", "default": False},
            "budget": {"type": "integer", "minimum": 1},
            "mode": {"type": "string", "enum": ["lite", "pro"]},
            "lite": {"type": "boolean", "default": False},
            "time_cue": TIME_CUE,
        },
        ["agent_id", "query"],
    ),
    params=ReconstructParams,
    handler=_reconstruct,
    demands=on_agent("agent_id", "read"),
    read_only=True,
    project_gate=True,
    refusal=refuse_with(items=[], returned_count=0),
    places_notes=True,
    always_load=True,
    pause=informing(_credits_statistics),
    primary_when=lambda settings: settings.confidence_enabled,
)

TOOLS = [RECONSTRUCT]
