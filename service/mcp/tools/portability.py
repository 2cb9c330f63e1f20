"""Portability tools: export_memories, import_memories, merge_memories
(docs/portability.md, "The format"; docs/portability.md, "Import rules";
docs/tools.md, "pause_persistence"; docs/portability.md, "Merging agents").

Export and import keep CPersona's names and parameters; their paths are file
names in the caller's own export area on the server (never arbitrary server
paths), exports come back with a short-lived signed ``download_url``, and
files to import are uploaded with ``POST /v1/files/<name>``. Grants follow docs/tools.md, "Grants",
with the export directory always configured: read-write on ``agent_id`` / ``target_agent_id`` (a
sweep ``*`` when empty); merge copy needs read on the source and read-write on the target, move
read-write on both. On top of that the export area's own rule holds
(``memory.portability.export_area``): importing a file needs read on every agent it holds, replacing
one read-write on each; a refusal is the spec's ``permission_denied`` shape naming that agent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

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
from service.mcp.render import portability as render
from service.mcp.schemas import identifier, name
from service.memory.portability import export, hosted, import_, merge
from service.memory.portability.access import Access, AgentDenied
from service.memory.portability.outcomes import Imported, Merged
from service.models import JsonObject, Permission

EXPORT_DESCRIPTION = """Back up an agent's (or every agent's) memories, episodes and
profile as JSONL in your export area. Returns {ok, path,
download_url, expires_at}."""

IMPORT_DESCRIPTION = """Restore a JSONL export from your export area; present rows are
skipped, dry_run only reports. Returns {ok, imported_memories,
...}."""

Outcome = TypeVar("Outcome")

MERGE_DESCRIPTION = """Copy or move one agent's data into another, skipping what the
target has; try dry_run first. Returns {ok, merged_memories, ...}."""


def area_access(env: ToolEnv) -> Access:
    """The caller as the export area sees it: its KEY_ID and its grants."""
    grants = env.caller.grants
    return Access(env.caller.key_id, lambda agent, level: acl.allows(grants, agent, level))


async def _denied_as(
    tool: str, env: ToolEnv, work: Awaitable[Outcome], answer: Callable[[Outcome], JsonObject]
) -> JsonObject:
    """``work``'s answer, or the permission_denied shape for an agent a file holds (which
    it does not name)."""
    try:
        return answer(await work)
    except AgentDenied as denied:
        return acl.file_denial(env.caller, denied.required, {"tool": tool})


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExportParams:
    agent_id: str
    output_path: str
    include_embeddings: bool


async def _export(env: ToolEnv, params: ExportParams) -> JsonObject:
    request = export.ExportRequest(params.agent_id, params.include_embeddings)
    work = hosted.export_to_area(
        env.lib, env.caller.tenant_id, area_access(env), params.output_path, request
    )
    return await _denied_as("export_memories", env, work, render.exported)


EXPORT_MEMORIES = ToolSpec(
    name="export_memories",
    description=EXPORT_DESCRIPTION,
    input_schema=obj(
        {
            "agent_id": identifier(description="'' = all"),
            "output_path": name(),
            "include_embeddings": {
                "type": "boolean",
                "default": False,
            },
        },
        ["agent_id", "output_path"],
    ),
    params=ExportParams,
    handler=_export,
    demands=on_agent("agent_id", "read-write"),
    destructive=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ImportParams:
    input_path: str
    target_agent_id: str
    dry_run: bool


async def _import(env: ToolEnv, params: ImportParams) -> JsonObject:
    request = import_.ImportRequest(params.target_agent_id, params.dry_run)
    work = hosted.import_from_area(
        env.lib, env.caller.tenant_id, area_access(env), params.input_path, request
    )
    return await _denied_as("import_memories", env, work, render.imported)


def _import_skipped(env: ToolEnv, params: ImportParams) -> JsonObject:
    """Nothing imported (a persistence pause)."""
    return render.imported(Imported(dry_run=False))


IMPORT_MEMORIES = ToolSpec(
    name="import_memories",
    description=IMPORT_DESCRIPTION,
    input_schema=obj(
        {
            "input_path": name(description="File name in your export area"),
            "target_agent_id": identifier(default="", description="'' = each record's own"),
            "dry_run": {
                "type": "boolean",
                "default": False,
            },
        },
        ["input_path"],
    ),
    params=ImportParams,
    handler=_import,
    demands=on_agent("target_agent_id", "read-write"),
    pause=PausePolicy(body=_import_skipped, applies=unless_dry_run),
    destructive=True,
    idempotent=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MergeParams:
    source_agent_id: str
    target_agent_id: str
    strategy: str
    mode: str
    dry_run: bool


def _merge_request(params: MergeParams) -> merge.MergeRequest:
    return merge.MergeRequest(
        source_agent_id=params.source_agent_id,
        target_agent_id=params.target_agent_id,
        strategy=params.strategy,
        mode=params.mode,
        dry_run=params.dry_run,
    )


async def _merge(env: ToolEnv, params: MergeParams) -> JsonObject:
    return render.merged(
        await merge.merge_memories(env.lib, env.caller.tenant_id, _merge_request(params))
    )


def _merge_demands(args: Mapping[str, Any]) -> list[Demand]:
    """copy: read the source, write the target; move: write both."""
    source: Permission = "read-write" if args.get("mode") == "move" else "read"
    return [
        (agent_of(args, "source_agent_id"), source),
        (agent_of(args, "target_agent_id"), "read-write"),
    ]


def _merge_skipped(env: ToolEnv, params: MergeParams) -> JsonObject:
    """Nothing merged (a persistence pause): not even a move reports its source."""
    req = _merge_request(params)
    skipped = Merged(
        dry_run=False,
        source_agent_id=req.source_agent_id,
        target_agent_id=req.target_agent_id,
        strategy=req.strategy,
        mode=req.mode,
    )
    return render.merged(skipped)


MERGE_MEMORIES = ToolSpec(
    name="merge_memories",
    description=MERGE_DESCRIPTION,
    input_schema=obj(
        {
            "source_agent_id": identifier(),
            "target_agent_id": identifier(),
            "strategy": name(default="skip"),
            "mode": name(default="copy", description="copy or move"),
            "dry_run": {
                "type": "boolean",
                "default": False,
            },
        },
        ["source_agent_id", "target_agent_id"],
    ),
    params=MergeParams,
    handler=_merge,
    demands=_merge_demands,
    pause=PausePolicy(body=_merge_skipped, applies=unless_dry_run),
    destructive=True,
    idempotent=True,
)

TOOLS = [EXPORT_MEMORIES, IMPORT_MEMORIES, MERGE_MEMORIES]
