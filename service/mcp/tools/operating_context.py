"""The operating context at the boundary: the get_operating_context tool and the project gate.

The six project tools call :func:`apply_gate` first thing in their handler
(after the ACL check, before the library and before any pause check, spec
§10.5), so library callers keep CPersona's exact semantics and never see the
``'@auto'`` sentinel or the registry.
"""

from __future__ import annotations

from typing import Literal, assert_never, get_args

from service.mcp.registry import JsonObject, ToolEnv, ToolSpec, any_caller, obj
from service.memory.operating_context import describe, gate, storage

GatedTool = Literal[
    "store", "archive_episode", "recall", "recall_with_context", "list_memories", "list_episodes"
]
WRITE_TOOLS: frozenset[GatedTool] = frozenset({"store", "archive_episode"})
GATED_TOOLS: tuple[GatedTool, ...] = get_args(GatedTool)


def gated_tool(name: str) -> GatedTool | None:
    """``name`` as one of the six project tools of spec §9.4, or None."""
    for tool in GATED_TOOLS:
        if tool == name:
            return tool
    return None


DESCRIPTION = """Read the operating context your operator set for this tenant.

Call once at the start of a session (or when a write is refused or warned about a
project) to learn the house rules: which project_ids exist, which project each
agent defaults to, and the doctrine sections the operator wrote for agents.

Without `section`: {ok, context_revision, instructions_summary, registry:
{project_ids, enforce: "off"|"warn"|"reject"}, defaults: {agent_id: project_id},
doctrine_sections: [names]}. With `section: "<name>"`: {ok, context_revision,
section, body} with that section's full text; an unknown name fails with the list
of `doctrine_sections`. When the operator set no context the answer is
{ok: false, enabled: false, error: "operating context is dormant — ..."}: nothing
is enforced then.

How the context affects the project tools (store, archive_episode, recall,
recall_with_context, list_memories, list_episodes): pass `project_id: "@auto"` to
use your agent's default project (the answer then carries `resolved_project_id`).
A project_id outside the registry adds `operating_context_warning`; with
`enforce: "reject"` writes to it are refused (reads are only warned). An omitted
or empty project_id is never checked."""


async def _get_operating_context(env: ToolEnv, args: JsonObject) -> JsonObject:
    context = await storage.get_context(env.lib, env.caller.tenant_id)
    section = args.get("section", "")
    return describe.describe(context, section, tenant=env.caller.tenant_slug)


GET_OPERATING_CONTEXT = ToolSpec(
    name="get_operating_context",
    description=DESCRIPTION,
    input_schema=obj(
        {
            "section": {
                "type": "string",
                "default": "",
                "description": "A doctrine section name to read in full; '' = the overview.",
            }
        }
    ),
    handler=_get_operating_context,
    demands=any_caller,
    read_only=True,
)

TOOLS = [GET_OPERATING_CONTEXT]


def refusal_body(tool: GatedTool, message: str, revision: str | None) -> JsonObject:
    """The spec's refusal shape of each gated tool (§9.4; reads are reserved, unreachable)."""
    body: JsonObject = {"ok": False, "error": message, "operating_context_revision": revision}
    match tool:
        case "store":
            body.update(result="rejected", reason=message)
        case "archive_episode":
            body["episode_id"] = None
        case "recall" | "recall_with_context":
            body["messages"] = []
        case "list_memories":
            body.update(memories=[], count=0)
        case "list_episodes":
            body.update(episodes=[], count=0)
        case _:
            assert_never(tool)
    return body


def _notes(result: gate.GateResult) -> JsonObject:
    notes: JsonObject = {}
    if result.warning is not None:
        notes["operating_context_warning"] = result.warning
    if result.echo_resolved:
        notes["resolved_project_id"] = result.project_id
    return notes


async def apply_gate(
    env: ToolEnv, tool: GatedTool, args: JsonObject
) -> tuple[JsonObject, JsonObject, JsonObject | None]:
    """Gate one call's ``project_id``: (arguments to use, keys to add to the answer, refusal).

    When the refusal is not None the handler returns it as is and does nothing
    else. Otherwise it runs with the returned arguments (``project_id``
    resolved, other keys untouched) and merges the notes
    (``operating_context_warning``, ``resolved_project_id``) into its answer.
    An omitted or empty project_id costs no database round trip.
    """
    project_id = args.get("project_id")
    if not isinstance(project_id, str) or not project_id:
        return args, {}, None
    agent_id = args.get("agent_id", "")
    context = await storage.get_context(env.lib, env.caller.tenant_id)
    result = gate.gate(
        context, agent_id if isinstance(agent_id, str) else "", project_id, tool in WRITE_TOOLS
    )
    if result.refusal is not None:
        return args, {}, refusal_body(tool, result.refusal, result.revision)
    return {**args, "project_id": result.project_id}, _notes(result), None
