"""The embedding queue's tool: get_queue_status."""

from __future__ import annotations

from service.mcp.params import NoParams
from service.mcp.registry import ToolEnv, ToolSpec, any_caller, obj
from service.mcp.render import queue as render
from service.memory.queue import backlog
from service.models import JsonObject


async def _queue_status(env: ToolEnv, params: NoParams) -> JsonObject:
    return render.queue_status(await backlog.queue_status(env.lib, env.caller.tenant_id))


GET_QUEUE_STATUS = ToolSpec(
    name="get_queue_status",
    description="""The embedding backlog: {enabled, pending, ...}.""",
    input_schema=obj({}),
    params=NoParams,
    handler=_queue_status,
    demands=any_caller,
    read_only=True,
)
TOOLS = [GET_QUEUE_STATUS]
