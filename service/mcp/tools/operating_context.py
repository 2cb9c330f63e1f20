"""get_operating_context: the operating context an operator set for the tenant.

The project gate it describes is applied by the dispatcher (``service.mcp.project_gate``).
"""

from __future__ import annotations

import dataclasses

from service.mcp.registry import ToolEnv, ToolSpec, any_caller, obj
from service.mcp.render import operating_context as render
from service.mcp.schemas import name
from service.memory.operating_context import describe, storage
from service.models import JsonObject

DESCRIPTION = """Your operator's house rules: project_ids, agents' default projects
(project_id "@auto"), doctrine. Read at session start or when a write warns about a
project. Returns {ok, instructions_summary, registry, defaults, doctrine_sections}."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GetOperatingContextParams:
    section: str


async def _get_operating_context(env: ToolEnv, params: GetOperatingContextParams) -> JsonObject:
    context = await storage.get_context(env.lib, env.caller.tenant_id)
    return render.description(
        describe.describe(context, params.section, tenant=env.caller.tenant_slug)
    )


GET_OPERATING_CONTEXT = ToolSpec(
    name="get_operating_context",
    description=DESCRIPTION,
    input_schema=obj({"section": name(default="", description="'' = overview")}),
    params=GetOperatingContextParams,
    handler=_get_operating_context,
    demands=any_caller,
    read_only=True,
)

TOOLS = [GET_OPERATING_CONTEXT]
