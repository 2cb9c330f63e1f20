"""get_contents: expand recall previews (and degraded list rows) to whole rows by ref."""

from __future__ import annotations

from service.mcp import delivery
from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent
from service.mcp.schemas import AGENT_ID
from service.mcp.shaping import contents as shaping
from service.memory import contents
from service.models import JsonObject

DESCRIPTION = """Fetch the full text of rows that recall (or a list tool) showed you trimmed.

Pass the `ref` values ("mem:<id>" / "ep:<id>") of the rows you actually need to read
in full, up to 20 per call, with the same agent_id you recalled with. Only rows of
that agent resolve. Returns {items, missing, count}: `items` are whole rows in request
order ({ref, content, source, timestamp?, id?}; episodes {ref, content: "[Episode] …",
source, timestamp, resolved}); `missing` lists refs that are malformed, not found or
not this agent's. One call returns at most 40,000 characters: when the next row would
exceed that, it and every later ref are listed in `deferred` (with `budget_chars`);
call again with exactly the `deferred` refs to get the rest. The first row always comes
whole, however long."""

REFS: JsonObject = {
    "type": "array",
    "items": {"type": "string"},
    "maxItems": contents.MAX_REFS,
    "description": 'Refs from recall/list results, e.g. ["mem:12", "ep:40"] (1..20).',
}


async def _get_contents(env: ToolEnv, args: JsonObject) -> JsonObject:
    """Resolve every ref whole in the library, then spend the batch budget here; the rows
    sent count as delivered to the request's session, if it names one (the ledger)."""
    agent_id, refs = contents.checked_request(args["agent_id"], args["refs"])
    found = await contents.resolve(env.lib, env.caller.tenant_id, agent_id, refs)
    answer = shaping.budget_contents(found)
    items = answer["items"]
    if isinstance(items, list):
        await delivery.record_whole(env, [str(item["ref"]) for item in items])
    return answer


GET_CONTENTS = ToolSpec(
    name="get_contents",
    description=DESCRIPTION,
    input_schema=obj({"agent_id": AGENT_ID, "refs": REFS}, ["agent_id", "refs"]),
    handler=_get_contents,
    demands=on_agent("agent_id", "read"),
    read_only=True,
)

TOOLS = [GET_CONTENTS]
