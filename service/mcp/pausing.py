"""The one place that applies a persistence pause (spec §10.5) to a call.

Every read of the pause state for a call goes through here: the dispatcher for every
tool with a :class:`~service.mcp.registry.PausePolicy`, the ``/v1/import`` endpoint
(with the import tool's policy) and the CLI's ``checkup --fix``. One indexed read per
call that can write, never cached, so a pause set through any replica holds at once.
"""

from __future__ import annotations

import dataclasses

from service.mcp.registry import ToolEnv, ToolSpec
from service.memory import pauses
from service.memory.library import Library
from service.models import JsonObject, TenantId


async def is_paused(lib: Library, tenant_id: TenantId, session_key: str = "") -> bool:
    """Whether writes of ``tenant_id`` (or of its session ``session_key``) are paused."""
    return await pauses.active_pause(lib, tenant_id, session_key) is not None


async def apply(
    spec: ToolSpec, env: ToolEnv, args: JsonObject
) -> tuple[ToolEnv, JsonObject | None]:
    """The pause step of one call: (the env to run with, the answer when not to run).

    Tools that validate first (``policy.validate``) refuse bad input whether paused
    or not; the others answer a paused call with the skipped body even for input the
    handler would refuse. An informing policy (no body) runs the call with
    ``env.paused`` set.
    """
    policy = spec.pause
    if policy is None:
        return env, None
    if policy.validate is not None:
        problem = policy.validate(args)
        if problem is not None:
            return env, spec.refusal(problem)
    if not policy.applies(env, args):
        return env, None
    active = await pauses.active_pause(env.lib, env.caller.tenant_id, env.session_key)
    if active is None:
        return env, None
    if policy.body is None:
        return dataclasses.replace(env, paused=True), None
    default = policy.body(env, args)
    if not isinstance(default, dict):
        default = await default
    return env, pauses.skipped_body(default, spec.name, active)
