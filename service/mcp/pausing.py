"""The one place that applies a persistence pause (docs/tools.md, "pause_persistence") to a call.

Every pause policy is applied here: by the dispatcher for every tool with a
:class:`~service.mcp.registry.PausePolicy`, by the ``/v1/import`` endpoint (with the
import tool's policy) and by the CLI's ``checkup --fix``. One indexed read per call that
can write, never cached, so a pause set through any replica holds at once: here, in a
transaction of its own, or, for an ``in_write`` policy (store, archive_episode,
update_memory), inside the write's own transaction (store reads it in its write
statement), whose finding :func:`run` answers.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from service.mcp.registry import SkippedBody, ToolEnv, ToolSpec
from service.mcp.render import pauses as render
from service.memory import pauses
from service.memory.library import Library
from service.models import JsonObject, TenantId

P = TypeVar("P")


async def is_paused(lib: Library, tenant_id: TenantId, session_key: str = "") -> bool:
    """Whether writes of ``tenant_id`` (or of its session ``session_key``) are paused."""
    return await pauses.active_pause(lib, tenant_id, session_key) is not None


async def apply(spec: ToolSpec[P], env: ToolEnv, params: P) -> tuple[ToolEnv, JsonObject | None]:
    """The pause step of one call: (the env to run with, the answer when not to run).

    Tools that validate first (``policy.validate``) refuse bad input whether paused
    or not; the others answer a paused call with the skipped body even for input the
    handler would refuse. An informing policy (no body) runs the call with
    ``env.paused`` set. An ``in_write`` policy reads nothing here: the call runs with
    ``env.pause_guard`` set and :func:`run` answers the pause its write finds.
    """
    policy = spec.pause
    if policy is None:
        return env, None
    if policy.validate is not None:
        problem = policy.validate(params)
        if problem is not None:
            return env, spec.refusal(problem)
    if not policy.applies(env, params):
        return env, None
    if policy.in_write:
        return dataclasses.replace(env, pause_guard=pauses.PauseGuard(env.session_key)), None
    active = await pauses.active_pause(env.lib, env.caller.tenant_id, env.session_key)
    if active is None:
        return env, None
    if policy.body is None:
        return dataclasses.replace(env, paused=True), None
    return env, await _skipped(spec.name, policy.body, env, params, active)


async def run(spec: ToolSpec[P], env: ToolEnv, params: P) -> JsonObject:
    """The handler, with a pause found inside its write answered like one found before."""
    try:
        return await spec.handler(env, params)
    except pauses.WritePaused as paused:
        body = None if spec.pause is None else spec.pause.body
        if env.pause_guard is None or body is None:  # only the pause step's guards
            raise
        return await _skipped(spec.name, body, env, params, paused.active)


async def _skipped(
    tool: str, body: SkippedBody[P], env: ToolEnv, params: P, active: pauses.ActivePause
) -> JsonObject:
    """The skipped body of a paused call (the policy's success shape, marked skipped)."""
    default = body(env, params)
    if not isinstance(default, dict):
        default = await default
    return render.skipped_body(default, tool, active)
