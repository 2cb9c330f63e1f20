"""Session controls: pause_persistence, resume_persistence, persistence_status.

A pause is scoped to the caller's tenant, or to one session key inside it when
the call passes ``session_key`` — never to the whole deployment (spec §10.5,
architecture §8). Write requests name their session with the
``X-CPersona-Session`` HTTP header; the dispatcher applies every write tool's
:class:`~service.mcp.registry.PausePolicy` against the pauses stored in
Postgres, so all replicas honour a pause at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.mcp.registry import Demand, ToolEnv, ToolSpec, any_caller, obj
from service.memory import pauses
from service.models import JsonObject

SESSION_KEY: JsonObject = {
    "type": "string",
    "default": "",
    "pattern": pauses.SESSION_KEY_PATTERN,
    "description": (
        "One session of your tenant: the value your host sends in the X-CPersona-Session "
        "header of that session's requests (up to 128 visible ASCII characters). Omit or "
        "'' to act on the whole tenant."
    ),
}

PAUSE_DESCRIPTION = """Pause writes for a while ("no-persist mode"); reads keep working.

Use before benchmarks, experiments or throwaway sessions whose results must not
become memories. While paused, every write tool (store, archive_episode,
update_profile, update_memory, delete_*, lock/unlock_memory, import/merge without
dry_run, calibration) writes nothing and answers with its usual shape plus
`persisted: false`, `dry_run: true` and a `reason` saying how long the pause lasts.

Without `session_key` the pause covers every client of your tenant; with it, only
requests whose X-CPersona-Session header carries that key. It ends after
`ttl_seconds` (default 1800, allowed 1..86400) or at resume_persistence; pausing
the same scope again replaces the time left. Returns {paused: true, expires_at,
ttl_seconds, scope: "tenant"|"session", session_key?}."""

RESUME_DESCRIPTION = """End a pause set by pause_persistence, so writes persist again.

Pass the same `session_key` you paused with (omit it for a tenant-wide pause).
Never fails. Returns {paused: false, was_active, scope, session_key?}; `was_active`
is false when that scope was not paused."""

STATUS_DESCRIPTION = """Tell whether writes are paused (see pause_persistence).

Returns {paused, expires_at|null, ttl_remaining_seconds|null, scope: "tenant"|"session",
session_key?}. With `session_key` it reports that session's own pause and adds
`tenant_paused`: a tenant-wide pause silences the session's writes too."""


def _whole_tenant(args: Mapping[str, Any]) -> list[Demand]:
    """Pause and resume need read-write on ``*`` (spec §9.2), whatever their scope."""
    return [("*", "read-write")]


async def _pause(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await pauses.pause(
        env.lib,
        env.caller.tenant_id,
        args["ttl_seconds"],
        args["session_key"],
        by=env.caller.key_id,
    )


async def _resume(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await pauses.resume(env.lib, env.caller.tenant_id, args["session_key"])


async def _status(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await pauses.status(env.lib, env.caller.tenant_id, args["session_key"])


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
                "description": "How long the pause lasts, in seconds (1..86400).",
            },
            "session_key": SESSION_KEY,
        }
    ),
    handler=_pause,
    demands=_whole_tenant,
    idempotent=True,
)

RESUME_PERSISTENCE = ToolSpec(
    name="resume_persistence",
    description=RESUME_DESCRIPTION,
    input_schema=obj({"session_key": SESSION_KEY}),
    handler=_resume,
    demands=_whole_tenant,
    idempotent=True,
)

PERSISTENCE_STATUS = ToolSpec(
    name="persistence_status",
    description=STATUS_DESCRIPTION,
    input_schema=obj({"session_key": SESSION_KEY}),
    handler=_status,
    demands=any_caller,
    read_only=True,
)

TOOLS = [PAUSE_PERSISTENCE, RESUME_PERSISTENCE, PERSISTENCE_STATUS]
