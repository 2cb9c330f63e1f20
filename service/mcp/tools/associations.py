"""The declared graph's tools: declare_associations, traverse (docs/tools.md)."""

from __future__ import annotations

import dataclasses

from service.mcp.registry import ToolEnv, ToolSpec, obj, on_agent, refuse_with, skip_with
from service.mcp.render import associations as render
from service.mcp.schemas import AGENT_ID, AS_OF, CHANNEL, PROJECT_ID, identifier, string
from service.memory import associations, bounds, traverse
from service.models import JsonObject

ITEMS_CAP = 256
"""The schema's cap on each list of a declaration: items past the library's 64 (aliases
past 32) are dropped one by one; past this the call is refused as too large."""

ASSOCIATIONS: JsonObject = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "maxItems": ITEMS_CAP},
        "relations": {"type": "array", "maxItems": ITEMS_CAP},
    },
}
"""The declaration object (declare_associations' and store's rider): the lists are
bounded here, their items are read leniently by the library (a bad one is dropped)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DeclareParams:
    agent_id: str
    associations: JsonObject
    anchor_ref: str
    retract: JsonObject
    channel: str
    project_id: str


async def _declare(env: ToolEnv, params: DeclareParams) -> JsonObject:
    declaration = associations.Declaration(
        agent_id=params.agent_id,
        associations=params.associations,
        anchor_ref=params.anchor_ref,
        retract=params.retract,
        project_id=params.project_id,
        channel=params.channel,
    )
    done = await associations.declare(env.lib, env.caller.tenant_id, declaration, env.pause_guard)
    return render.declared(done)


DECLARE_ASSOCIATIONS = ToolSpec(
    name="declare_associations",
    description="""Declare associations {entities: [{name, aliases}], relations: [{subject,
predicate, object}]} (an end: a name or mem:N/ep:N); anchor_ref mentions them. Returns ids;
bad items in dropped.""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "associations": {**ASSOCIATIONS, "default": {}},
            "anchor_ref": string(bounds.NAME_CHARS, default=""),
            "retract": {
                "type": "object",
                "default": {},
                "properties": {
                    "relations": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "maxItems": ITEMS_CAP,
                    },
                    "mentions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "entity": {"type": "integer"},
                                "ref": string(bounds.NAME_CHARS),
                            },
                        },
                        "maxItems": ITEMS_CAP,
                    },
                },
            },
            "channel": identifier(default=""),
            "project_id": identifier(default=""),
        },
        ["agent_id"],
    ),
    params=DeclareParams,
    handler=_declare,
    demands=on_agent("agent_id", "read-write"),
    project_gate=True,
    refusal=refuse_with(result="rejected", **render.EMPTY),
    refusal_fields=lambda args: {"result": "rejected"},  # a denial too (CPersona 2.6)
    pause=skip_with(render.DECLARE_PAUSED, in_write=True),
    destructive=True,
    idempotent=True,
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TraverseParams:
    agent_id: str
    entity: str
    max_hops: int
    limit: int
    channel: str
    project_id: str | None = None
    source_id: str
    as_of: str = ""


async def _traverse(env: ToolEnv, params: TraverseParams) -> JsonObject:
    request = traverse.TraverseRequest(
        agent_id=params.agent_id,
        entity=params.entity,
        max_hops=params.max_hops,
        limit=params.limit,
        project_id=params.project_id,
        channel=params.channel,
        source_id=params.source_id,
        as_of=params.as_of,
    )
    return render.neighbourhood(await traverse.traverse(env.lib, env.caller.tenant_id, request))


TRAVERSE = ToolSpec(
    name="traverse",
    description="""An entity's declared neighbourhood: entities within max_hops, refs
mentioning them, relations among them.""",
    input_schema=obj(
        {
            "agent_id": AGENT_ID,
            "entity": string(bounds.NAME_CHARS),
            "max_hops": {"type": "integer", "minimum": 0, "maximum": 5, "default": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            "channel": CHANNEL,
            "project_id": PROJECT_ID,
            "source_id": identifier(default=""),
            "as_of": AS_OF,
        },
        ["agent_id", "entity"],
    ),
    params=TraverseParams,
    handler=_traverse,
    demands=on_agent("agent_id", "read"),
    read_only=True,
    project_gate=True,
    refusal=refuse_with(entities=[], relations=[]),
)

TOOLS = [DECLARE_ASSOCIATIONS, TRAVERSE]
