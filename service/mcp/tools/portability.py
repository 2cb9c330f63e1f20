"""Portability tools: export_memories, import_memories, merge_memories (spec §10.3-10.6).

Export and import keep CPersona's names and parameters; their paths are file
names in the caller's own export area on the server (never arbitrary server
paths), exports come back with a short-lived signed ``download_url``, and
files to import are uploaded with ``POST /v1/files/<name>``. Grants follow spec
§9.2 with the export directory always configured: read-write on ``agent_id`` /
``target_agent_id`` (a sweep ``*`` when empty); merge copy needs read on the
source and read-write on the target, move read-write on both. On top of that the
export area's own rule holds (``memory.portability.export_area``): importing a
file needs read on every agent it holds, replacing one read-write on each; a
refusal is the spec's ``permission_denied`` shape naming that agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from service.mcp import acl
from service.mcp.registry import (
    Demand,
    PausePolicy,
    ToolEnv,
    ToolSpec,
    agent_of,
    obj,
    on_agent,
    unless_dry_run,
)
from service.memory.portability import export, hosted, import_, merge
from service.memory.portability.access import Access, AgentDenied
from service.models import JsonObject, Permission

EXPORT_DESCRIPTION = """Back up memories, episodes and profiles as a JSONL file
(CPersona's `cpersona-export/1.0` format) in your tenant's export area on the server.

`agent_id` picks one agent ("" exports every agent of your tenant). `output_path` is a
file name inside your export area, e.g. "backup-2026-11-30.jsonl" (relative; sub-folders
allowed; `..` and absolute paths are rejected); an existing file of that name is replaced
atomically (you need read-write on every agent it holds). Embeddings are included only
with `include_embeddings: true`. Files are deleted after CPERSONA_EXPORT_RETENTION_HOURS
(24 h by default) and when an agent they hold is deleted; your tenant's files share a size
quota. Returns {ok, path, memories, episodes, profiles, download_url, expires_at}: fetch the
file with GET download_url (with an API key that may read every agent in it; valid 15
minutes), or restore it later with import_memories(input_path=path)."""

IMPORT_DESCRIPTION = """Restore a JSONL export (CPersona `cpersona-export/1.0`/`1.1`) from a
file in your tenant's export area: one written by export_memories, or uploaded with
`POST /v1/files/<name>` (any key of your tenant). You need read on every agent whose
records the file holds, whoever wrote it. For very large files stream them to
`POST /v1/import` instead.

Records keep their own agent unless `target_agent_id` is given. Memories already present
(same msg_id, or same content in the same project and channel) are skipped, so importing
the same file twice changes nothing. `dry_run: true` reports exactly what a real import
would do and writes nothing. A file whose header counts disagree with its records is
rejected whole ("import aborted and rolled back: ..."). Returns {ok, dry_run,
imported_memories, skipped_memories, imported_episodes, skipped_episodes,
profile_updated, errors?}."""

MERGE_DESCRIPTION = """Copy (mode "copy") or move (mode "move") every memory, episode and
profile of one agent into another agent of your tenant.

Rows the target already has (same msg_id or same content in the same bucket; episodes
with the same summary) are skipped; a profile is copied only if the target has none.
"move" then deletes exactly the copied rows from the source and reports what was left
there (`left_at_source`). Only strategy "skip" exists. Run with `dry_run: true` first:
it reports exactly the counts the real merge will produce and writes nothing.
Returns {ok, dry_run, merged_memories, skipped_memories, merged_episodes,
skipped_episodes, profile_copied, skipped_profile, source_deleted?, left_at_source?}."""


def area_access(env: ToolEnv) -> Access:
    """The caller as the export area sees it: its KEY_ID and its grants."""
    grants = env.caller.grants
    return Access(env.caller.key_id, lambda agent, level: acl.allows(grants, agent, level))


async def _denied_as(tool: str, env: ToolEnv, work: Awaitable[JsonObject]) -> JsonObject:
    """``work``'s answer, or the permission_denied shape for an agent a file holds."""
    try:
        return await work
    except AgentDenied as denied:
        return acl.denial(env.caller, denied.agent, denied.required, {"tool": tool})


async def _export(env: ToolEnv, args: JsonObject) -> JsonObject:
    request = export.ExportRequest(args["agent_id"], args["include_embeddings"])
    work = hosted.export_to_area(
        env.lib, env.caller.tenant_id, area_access(env), args["output_path"], request
    )
    return await _denied_as("export_memories", env, work)


EXPORT_MEMORIES = ToolSpec(
    name="export_memories",
    description=EXPORT_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": {
                "type": "string",
                "description": 'Agent to export; "" exports every agent of your tenant.',
            },
            "output_path": {
                "type": "string",
                "description": 'File name in your export area, e.g. "backup.jsonl".',
            },
            "include_embeddings": {
                "type": "boolean",
                "default": False,
                "description": "Also write each row's embedding (much larger file).",
            },
        },
        ["agent_id", "output_path"],
    ),
    handler=_export,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
)


async def _import(env: ToolEnv, args: JsonObject) -> JsonObject:
    request = import_.ImportRequest(args["target_agent_id"], args["dry_run"])
    work = hosted.import_from_area(
        env.lib, env.caller.tenant_id, area_access(env), args["input_path"], request
    )
    return await _denied_as("import_memories", env, work)


def _import_skipped(env: ToolEnv, args: JsonObject) -> JsonObject:
    return {
        "ok": True,
        "dry_run": False,
        "imported_memories": 0,
        "skipped_memories": 0,
        "imported_episodes": 0,
        "skipped_episodes": 0,
        "profile_updated": False,
    }


IMPORT_MEMORIES = ToolSpec(
    name="import_memories",
    description=IMPORT_DESCRIPTION,
    input_schema=obj(
        {
            "input_path": {
                "type": "string",
                "description": "File name in your export area (an export or an upload).",
            },
            "target_agent_id": {
                "type": "string",
                "default": "",
                "description": 'Import everything into this agent; "" keeps each record\'s.',
            },
            "dry_run": {
                "type": "boolean",
                "default": False,
                "description": "Report what would be imported without writing anything.",
            },
        },
        ["input_path"],
    ),
    handler=_import,
    demands=on_agent("target_agent_id", "read-write"),
    destructive=True,
    pause=PausePolicy(body=_import_skipped, applies=unless_dry_run),
)


def _merge_request(args: JsonObject) -> merge.MergeRequest:
    return merge.MergeRequest(
        source_agent_id=args["source_agent_id"],
        target_agent_id=args["target_agent_id"],
        strategy=args["strategy"],
        mode=args["mode"],
        dry_run=args["dry_run"],
    )


async def _merge(env: ToolEnv, args: JsonObject) -> JsonObject:
    return await merge.merge_memories(env.lib, env.caller.tenant_id, _merge_request(args))


def _merge_demands(args: Mapping[str, Any]) -> list[Demand]:
    """copy: read the source, write the target; move: write both."""
    source: Permission = "read-write" if args.get("mode") == "move" else "read"
    return [
        (agent_of(args, "source_agent_id"), source),
        (agent_of(args, "target_agent_id"), "read-write"),
    ]


def _merge_skipped(env: ToolEnv, args: JsonObject) -> JsonObject:
    req = _merge_request(args)
    return {
        "ok": True,
        "dry_run": False,
        "source_agent_id": req.source_agent_id,
        "target_agent_id": req.target_agent_id,
        "strategy": req.strategy,
        "mode": req.mode,
        "merged_memories": 0,
        "skipped_memories": 0,
        "merged_episodes": 0,
        "skipped_episodes": 0,
        "profile_copied": False,
        "skipped_profile": False,
    }


MERGE_MEMORIES = ToolSpec(
    name="merge_memories",
    description=MERGE_DESCRIPTION,
    input_schema=obj(
        {
            "source_agent_id": {"type": "string", "description": "Agent to copy from."},
            "target_agent_id": {"type": "string", "description": "Agent to copy into."},
            "strategy": {
                "type": "string",
                "default": "skip",
                "description": 'Conflict strategy; only "skip" (keep the target\'s row).',
            },
            "mode": {
                "type": "string",
                "default": "copy",
                "description": '"copy" keeps the source; "move" deletes what was copied.',
            },
            "dry_run": {
                "type": "boolean",
                "default": False,
                "description": "Report the exact counts without writing anything.",
            },
        },
        ["source_agent_id", "target_agent_id"],
    ),
    handler=_merge,
    demands=_merge_demands,
    destructive=True,
    pause=PausePolicy(body=_merge_skipped, applies=unless_dry_run),
)

TOOLS = [EXPORT_MEMORIES, IMPORT_MEMORIES, MERGE_MEMORIES]
