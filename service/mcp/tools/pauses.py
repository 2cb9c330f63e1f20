"""Session controls: pause_persistence, resume_persistence, persistence_status.

A pause is scoped to the caller's tenant, or to one session key inside it when
the call passes ``session_key`` — never to the whole deployment
(docs/tools.md, "pause_persistence"). Write requests name their session with the
``X-CPersona-Session`` HTTP header; the dispatcher applies every write tool's
:class:`~service.mcp.registry.PausePolicy` against the pauses stored in
Postgres, so all replicas honour a pause at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.mcp.registry import Demand, ToolEnv, ToolSpec, any_caller, obj
from service.mcp.render import pauses as render
from service.memory import pauses
from service.models import JsonObject

SESSION_KEY: JsonObject = {
    "type": "string",
    "maxLength": pauses.SESSION_KEY_MAX,
    "default": "",
    "pattern": pauses.SESSION_KEY_PATTERN,
    "description": "'' = tenant",
}

PAUSE_DESCRIPTION = """Pause writes for ttl_seconds (e.g. for a test); writes then
answer persisted: false. Returns {paused,
expires_at, scope}."""

RESUME_DESCRIPTION = """End a pause (same session_key). Returns {paused: false,
was_active}."""

STATUS_DESCRIPTION = """Whether writes are paused: {paused, expires_at, scope,
tenant_paused?}."""


def _whole_tenant(args: Mapping[str, Any]) -> list[Demand]:
    """Pause and resume need read-write on ``*`` (docs/tools.md, "Grants"), whatever their scope."""
    return [("*", "read-write")]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PauseParams:
    ttl_seconds: int
    session_key: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SessionParams:
    """resume_persistence and persistence_status."""

    session_key: str


async def _pause(env: ToolEnv, params: PauseParams) -> JsonObject:
    done = await pauses.pause(
        env.lib,
        env.caller.tenant_id,
        params.ttl_seconds,
        params.session_key,
        by=env.caller.key_id,
    )
    return render.pause_set(done)


async def _resume(env: ToolEnv, params: SessionParams) -> JsonObject:
    done = await pauses.resume(env.lib, env.caller.tenant_id, params.session_key)
    return render.pause_lifted(done)


async def _status(env: ToolEnv, params: SessionParams) -> JsonObject:
    state = await pauses.status(env.lib, env.caller.tenant_id, params.session_key)
    return render.pause_state(state)


PAUSE_PERSISTENCE = ToolSpec(
    name="pause_persistence",
    description=PAUSE_DESCRIPTION,
    input_schema=obj(
        {
            "ttl_seconds": {
                "type": "integer",
                "default": pauses.DEFAULT_TTL_SECONDS,
                "minimum": 1,
                "maximum": pauses.MAX_TTL_SECONDS,
            },
            "session_key": SESSION_KEY,
        }
    ),
    params=PauseParams,
    handler=_pause,
    demands=_whole_tenant,
    destructive=False,
    idempotent=True,
)

RESUME_PERSISTENCE = ToolSpec(
    name="resume_persistence",
    description=RESUME_DESCRIPTION,
    input_schema=obj({"session_key": SESSION_KEY}),
    params=SessionParams,
    handler=_resume,
    demands=_whole_tenant,
    destructive=False,
    idempotent=True,
)

PERSISTENCE_STATUS = ToolSpec(
    name="persistence_status",
    description=STATUS_DESCRIPTION,
    input_schema=obj({"session_key": SESSION_KEY}),
    params=SessionParams,
    handler=_status,
    demands=any_caller,
    read_only=True,
)

TOOLS = [PAUSE_PERSISTENCE, RESUME_PERSISTENCE, PERSISTENCE_STATUS]
