"""delete_agent_data: wipe one agent."""

from __future__ import annotations

import dataclasses

from service.mcp.registry import PausePolicy, ToolEnv, ToolSpec, obj, on_agent
from service.mcp.render import writes
from service.mcp.schemas import AGENT_ID
from service.memory import agents
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAgentDataParams:
    agent_id: str


def _nothing_deleted(env: ToolEnv, params: DeleteAgentDataParams) -> JsonObject:
    """delete_agent_data's success shape with zero counts (its skipped body under a pause)."""
    nothing = agents.AgentDataDeleted(params.agent_id, 0, 0, 0, 0)
    return writes.agent_data_deleted(nothing)


async def _delete_agent_data(env: ToolEnv, params: DeleteAgentDataParams) -> JsonObject:
    deleted = await agents.delete_agent_data(env.lib, env.caller.tenant_id, params.agent_id)
    return writes.agent_data_deleted(deleted)


DELETE_AGENT_DATA = ToolSpec(
    name="delete_agent_data",
    description="""Irreversibly delete one agent's memories (locked too), episodes,
profile and export files. Returns {ok, deleted_memories, ...}.""",
    input_schema=obj({"agent_id": AGENT_ID}, ["agent_id"]),
    params=DeleteAgentDataParams,
    handler=_delete_agent_data,
    demands=on_agent("agent_id", "read-write"),
    pause=PausePolicy(body=_nothing_deleted),
    destructive=True,
    idempotent=True,
)
TOOLS = [DELETE_AGENT_DATA]
