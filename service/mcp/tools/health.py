"""Maintenance tools: check_health, deep_check, migrate_channel_axis
(docs/health.md, "check_health"; docs/health.md, "deep_check";
docs/health.md, "migrate_channel_axis").

ACL (docs/tools.md, "Grants"): check_health and deep_check need read on the agent (``*`` for a
sweep), read-write when ``fix`` is true; migrate_channel_axis needs read-write.
Under a persistence pause of the caller's tenant or session (docs/tools.md, "pause_persistence")
they still run: ``fix`` is downgraded to a report and migrate_channel_axis to a dry run, and the
answer says so with ``repairs_skipped``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.mcp.registry import (
    Demand,
    ToolEnv,
    ToolSpec,
    agent_of,
    informing,
    obj,
    on_agent,
)
from service.mcp.render import health as render
from service.mcp.schemas import identifier, names
from service.memory import health
from service.memory.health import channel_axis
from service.memory.library import Library
from service.models import JsonObject, TenantId

AGENT_SWEEP: JsonObject = identifier(default="", description="'' = all")
FIX: JsonObject = {
    "type": "boolean",
    "default": False,
}


def _fix_demands(args: Mapping[str, Any]) -> list[Demand]:
    """Read to look, read-write to repair."""
    return [(agent_of(args, "agent_id"), "read-write" if args.get("fix") else "read")]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CheckParams:
    """check_health and deep_check take the same parameters."""

    agent_id: str
    fix: bool
    checks: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MigrateParams:
    agent_id: str
    dry_run: bool
    globalize_unrecoverable: bool


def _repairs(env: ToolEnv, params: CheckParams) -> bool:
    """check_health and deep_check write only when asked to fix."""
    return params.fix


def _migrates(env: ToolEnv, params: MigrateParams) -> bool:
    """migrate_channel_axis writes only outside a dry run."""
    return params.dry_run is False


def _scope(
    env: ToolEnv, params: CheckParams
) -> tuple[Library, TenantId, str, bool, tuple[str, ...]]:
    """What check_health and deep_check both take: the caller's tenant, the agent (or a
    sweep), whether to fix, and which checks."""
    return env.lib, env.caller.tenant_id, params.agent_id, params.fix, params.checks


async def _check_health(env: ToolEnv, params: CheckParams) -> JsonObject:
    report = await health.check_health(*_scope(env, params), paused=env.paused)
    return render.health_report(report)


async def _deep_check(env: ToolEnv, params: CheckParams) -> JsonObject:
    report = await health.deep_check(*_scope(env, params), paused=env.paused)
    return render.deep_report(report)


CHECK_HEALTH_DESCRIPTION = """Check your tenant's memory for problems (fix: true repairs); an
unknown check answers valid_checks. Returns {status, issues,
fixed}."""

CHECK_HEALTH = ToolSpec(
    name="check_health",
    description=CHECK_HEALTH_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": AGENT_SWEEP,
            "fix": FIX,
            "checks": names("[] = all"),
        }
    ),
    params=CheckParams,
    handler=_check_health,
    demands=_fix_demands,
    pause=informing(_repairs),
)


DEEP_CHECK = ToolSpec(
    name="deep_check",
    description="""Review one agent's memory (anonymous sources, short content, stale
profile, near duplicates); fix repairs the first two. Returns {results, fixed}.""",
    input_schema=obj(
        {
            "agent_id": identifier(),
            "fix": FIX,
            "checks": names("[] = all"),
        },
        ["agent_id"],
    ),
    params=CheckParams,
    handler=_deep_check,
    demands=_fix_demands,
    pause=informing(_repairs),
)


async def _migrate_channel_axis(env: ToolEnv, params: MigrateParams) -> JsonObject:
    done = await channel_axis.migrate_channel_axis(
        env.lib,
        env.caller.tenant_id,
        params.agent_id,
        params.dry_run,
        params.globalize_unrecoverable,
        paused=env.paused,
    )
    return render.channel_migration(done)


MIGRATE_CHANNEL_AXIS = ToolSpec(
    name="migrate_channel_axis",
    description="""Move channel "discord" memories to the channel their metadata
names; dry_run only reports. Returns {recoverable_total, migrated}.""",
    input_schema=obj(
        {
            "agent_id": AGENT_SWEEP,
            "dry_run": {
                "type": "boolean",
                "default": True,
                "description": "false applies it",
            },
            "globalize_unrecoverable": {
                "type": "boolean",
                "default": False,
                "description": "Move the rest to channel ''",
            },
        }
    ),
    params=MigrateParams,
    handler=_migrate_channel_axis,
    demands=on_agent("agent_id", "read-write"),
    pause=informing(_migrates),
)

TOOLS = [CHECK_HEALTH, DEEP_CHECK, MIGRATE_CHANNEL_AXIS]
