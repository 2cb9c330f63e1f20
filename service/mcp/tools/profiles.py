"""Profile tools: get_profile, update_profile."""

from __future__ import annotations

import dataclasses

from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent, skip_with
from service.mcp.render import writes
from service.mcp.schemas import AGENT_ID
from service.memory import profiles
from service.models import JsonObject


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GetProfileParams:
    agent_id: str


async def _get_profile(env: ToolEnv, params: GetProfileParams) -> JsonObject:
    return writes.profile(
        await profiles.get_profile(env.lib, env.caller.tenant_id, params.agent_id)
    )


GET_PROFILE = ToolSpec(
    name="get_profile",
    description="""Read the agent's free-text profile: {profile} ("" if none).""",
    input_schema=obj({"agent_id": AGENT_ID}, ["agent_id"]),
    params=GetProfileParams,
    handler=_get_profile,
    demands=on_agent("agent_id", "read"),
    read_only=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UpdateProfileParams:
    agent_id: str
    profile: str


async def _update_profile(env: ToolEnv, params: UpdateProfileParams) -> JsonObject:
    update = await profiles.update_profile(
        env.lib, env.caller.tenant_id, params.agent_id, params.profile
    )
    return writes.profile_update(update)


UPDATE_PROFILE = ToolSpec(
    name="update_profile",
    description="""Replace the agent's whole profile (at most 2,000 characters).
Returns {ok, profiles_updated}.""",
    input_schema=obj(
        {"agent_id": AGENT_ID, "profile": {"type": "string"}},
        ["agent_id", "profile"],
    ),
    params=UpdateProfileParams,
    handler=_update_profile,
    demands=on_agent("agent_id", "read-write"),
    pause=skip_with(writes.PROFILE_PAUSED),
    destructive=False,
)
TOOLS = [GET_PROFILE, UPDATE_PROFILE]
