"""Maintenance tools: check_health, deep_check, migrate_channel_axis (spec §10.1, §10.2,
§10.8).

ACL (spec §9.2): check_health and deep_check need read on the agent (``*`` for a
sweep), read-write when ``fix`` is true; migrate_channel_axis needs read-write.
Under a persistence pause of the caller's tenant or session (§10.5) they still run:
``fix`` is downgraded to a report and migrate_channel_axis to a dry run, and the
answer says so with ``repairs_skipped``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from service.mcp.registry import (
    Demand,
    Handler,
    ToolEnv,
    ToolSpec,
    agent_of,
    informing,
    obj,
    on_agent,
)
from service.memory import health
from service.memory.health import channel_axis
from service.models import JsonObject

AGENT_SWEEP: JsonObject = {
    "type": "string",
    "default": "",
    "description": "Agent to check; '' covers every agent of your tenant.",
}
FIX: JsonObject = {
    "type": "boolean",
    "default": False,
    "description": "Repair what can be repaired (needs read-write). Locked rows are never touched.",
}


def _checks(description: str) -> JsonObject:
    return {"type": "array", "items": {"type": "string"}, "default": [], "description": description}


def _fix_demands(args: Mapping[str, Any]) -> list[Demand]:
    """Read to look, read-write to repair (spec §9.2)."""
    return [(agent_of(args, "agent_id"), "read-write" if args.get("fix") else "read")]


def _repairs(env: ToolEnv, args: JsonObject) -> bool:
    """check_health and deep_check write only when asked to fix."""
    return bool(args.get("fix"))


def _migrates(env: ToolEnv, args: JsonObject) -> bool:
    """migrate_channel_axis writes only outside a dry run."""
    return args["dry_run"] is False


def _runs(check: Callable[..., Awaitable[JsonObject]]) -> Handler:
    """The handler of check_health or deep_check: they take the same arguments."""

    async def handler(env: ToolEnv, args: JsonObject) -> JsonObject:
        return await check(
            env.lib,
            env.caller.tenant_id,
            args["agent_id"],
            bool(args["fix"]),
            args["checks"],
            paused=env.paused,
        )

    return handler


CHECK_HEALTH_DESCRIPTION = f"""Check your tenant's memory for problems; fix=true repairs them.

Runs a registry of deterministic checks: content hygiene (recall annotations, Discord
mentions, oversized/empty content, duplicates across channels, oversized profiles),
embeddings (wrong width, missing vectors, stuck queue jobs), record shapes (JSON,
timestamps, sources), project/channel spelling drift, the operating context, and the
database itself (migrations, indexes, row-level security). Pass `checks` to run some:
{", ".join(health.CHECK_NAMES)}.

Returns {{total_memories, issues: [{{type, severity: critical|warn|info, check, ...counts,
repairable?, needs_human_review?, hint?}}], severity_summary: {{critical, warn, info}},
status: healthy|degraded|unhealthy, fixed, checks_run, stats: {{db_size_bytes, memories,
episodes, profiles, pending_tasks, axes}}}}. `repairable` is how many rows a fix would
write now. With fix=true, `issues` show what each repair wrote while `status` and
`severity_summary` describe what is left. Repairs run in one transaction, never touch
locked memories, and are skipped (`repairs_skipped`) while persistence is paused.
An unknown check name fails with `unknown_checks` and `valid_checks`."""

CHECK_HEALTH = ToolSpec(
    name="check_health",
    description=CHECK_HEALTH_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": AGENT_SWEEP,
            "fix": FIX,
            "checks": _checks("Check names to run; empty runs all."),
        }
    ),
    handler=_runs(health.check_health),
    demands=_fix_demands,
    pause=informing(_repairs),
)


DEEP_CHECK = ToolSpec(
    name="deep_check",
    description=f"""Heuristic data-quality review of one agent's memory.

Checks ({", ".join(health.DEEP_CHECKS)}): anonymous_source (User-sentinel sources whose
content starts with "[name] "; fix fills the name), short_content (5 characters or
fewer; fix deletes them), stale_profile (not updated for 30 days), orphaned_episodes
(no memory inside the episode's time range), calibration_staleness, near_duplicate
(cosine above 0.97 among the newest 1000 embedded memories, exact copies excluded:
merge candidates for you to judge). Only the first two act on fix=true, and never on
locked memories. Returns {{agent_id, checks_run, results: {{name: {{...}}}}, fixed,
repairs_skipped?}}; unknown names are skipped, a failing check reports {{error}}.""",
    input_schema=obj(
        {
            "agent_id": {"type": "string", "description": "The agent to review (exact)."},
            "fix": FIX,
            "checks": _checks("Deep check names to run; empty runs all."),
        },
        ["agent_id"],
    ),
    handler=_runs(health.deep_check),
    demands=_fix_demands,
    pause=informing(_repairs),
)


async def _migrate_channel_axis(env: ToolEnv, args: JsonObject) -> JsonObject:
    dry_run = bool(args["dry_run"])
    return await channel_axis.migrate_channel_axis(
        env.lib,
        env.caller.tenant_id,
        args["agent_id"],
        dry_run,
        bool(args["globalize_unrecoverable"]),
        paused=env.paused,
    )


MIGRATE_CHANNEL_AXIS = ToolSpec(
    name="migrate_channel_axis",
    description="""Move memories filed under channel "discord" to their real channel.

A Discord bridge's metadata.session_id "<channel_id>:<user>:<chunk>" names the
channel: such rows are recoverable and move to "<channel_id>". Rows without one are
unrecoverable; with globalize_unrecoverable=true they move to the channel-less pool
('', visible from every channel). Only the channel changes; a move that would
duplicate content already there is skipped, locked rows stay. dry_run (default true)
only reports. Returns {agent_id, dry_run, recoverable_total, recoverable_by_channel:
[{channel, count}], unrecoverable_total, invalid_metadata_total, invalid_metadata_ids,
globalize_unrecoverable, migrated, globalized, samples}. Forced to a dry run while
persistence is paused (repairs_skipped).""",
    input_schema=obj(
        {
            "agent_id": AGENT_SWEEP,
            "dry_run": {
                "type": "boolean",
                "default": True,
                "description": "Report only (default); false applies the migration.",
            },
            "globalize_unrecoverable": {
                "type": "boolean",
                "default": False,
                "description": "Also move unrecoverable rows to the channel-less pool.",
            },
        }
    ),
    handler=_migrate_channel_axis,
    demands=on_agent("agent_id", "read-write"),
    pause=informing(_migrates),
)

TOOLS = [CHECK_HEALTH, DEEP_CHECK, MIGRATE_CHANNEL_AXIS]
