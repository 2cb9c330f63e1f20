"""get_contents: expand recall previews (and degraded list rows) to whole rows by ref."""

from __future__ import annotations

import dataclasses

from service.mcp import delivery
from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent
from service.mcp.render import contents as render
from service.mcp.schemas import AGENT_ID, string
from service.mcp.shaping import contents as contents_shaping
from service.memory import bounds, contents, ranges
from service.models import JsonObject

DESCRIPTION = """Full text of preview rows: their refs (at most 20) and agent_id.
Returns {items, missing}; past 40,000 characters the rest is in
deferred: call again with those. A ref {ref, span:[s,e] or passage:i
or [i,j], revision?} reads that part (else unresolved)."""

INDEX: JsonObject = {"type": "integer", "minimum": 0}
PAIR: JsonObject = {"type": "array", "items": INDEX, "maxItems": 2}
RANGE: JsonObject = obj(
    {
        "ref": string(64),
        "span": PAIR,
        "passage": {"anyOf": [INDEX, {"type": "array"}]},
        "revision": string(64),
    },
    ["ref"],
)
REFS: JsonObject = {
    "type": "array",
    "items": {"anyOf": [string(bounds.QUERY_CHARS), RANGE]},
    "maxItems": contents.MAX_REFS,
    "description": "mem:N or ep:N",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GetContentsParams:
    agent_id: str
    refs: tuple[str | JsonObject, ...]


async def _get_contents(env: ToolEnv, params: GetContentsParams) -> JsonObject:
    """Resolve every ref (whole, or a range object's slice) in the library, then spend the
    batch budget here; whole rows sent count as delivered to the request's session, if it
    names one (the ledger); a range's slice does not."""
    agent_id, refs = contents.checked_request(params.agent_id, params.refs)
    found = await ranges.resolve(env.lib, env.caller.tenant_id, agent_id, refs)
    result = contents_shaping.budget_contents(found)
    await delivery.record_whole(env, [item.ref for item in result.items if item.range is None])
    return render.contents(result, contents_shaping.GET_CONTENTS_BUDGET_CHARS)


GET_CONTENTS = ToolSpec(
    name="get_contents",
    description=DESCRIPTION,
    input_schema=obj({"agent_id": AGENT_ID, "refs": REFS}, ["agent_id", "refs"]),
    params=GetContentsParams,
    handler=_get_contents,
    demands=on_agent("agent_id", "read"),
    read_only=True,
)

TOOLS = [GET_CONTENTS]
