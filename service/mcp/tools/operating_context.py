"""get_operating_context: the operating context an operator set for the tenant.

The project gate it describes is applied by the dispatcher (``service.mcp.project_gate``).
"""

from __future__ import annotations

from service.mcp.registry import ToolEnv, ToolSpec, any_caller, obj
from service.memory.operating_context import describe, storage
from service.models import JsonObject

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
    section = args["section"]
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
