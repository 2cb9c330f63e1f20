"""traverse: the declared neighbourhood of an entity (docs/tools.md, "traverse"), refs
only, never record text. One bounded statement (``service.db.associations.traverse``);
the answer is a typed record the MCP boundary renders (``service.mcp.render.associations``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from service.db import walks as graph
from service.memory import supersession
from service.memory.associations import normalize
from service.memory.library import Library
from service.models import TenantId

MAX_HOPS: Final = 5
"""traverse's deepest walk (the schema's maximum; the library clamps too)."""
MAX_LIMIT: Final = 100
"""traverse's most entities, and mentions per entity."""


@dataclasses.dataclass(frozen=True, slots=True)
class TraverseRequest:
    """A traverse: the start's name or alias, the read scope (recall's semantics: project
    None = all, '' = the global pool, X = X plus it; channel '' = any; source_id a
    substring of the memories' source.id, '' = any), and the bounds."""

    agent_id: str
    entity: str
    max_hops: int = 1
    limit: int = 20
    project_id: str | None = None
    channel: str = ""
    source_id: str = ""
    as_of: str = ""
    """docs/tools.md, "Facts that change": '' = now; else only relations declared by then."""


@dataclasses.dataclass(frozen=True, slots=True)
class Entity:
    """A reached entity: id, name as stored, hops from a start, aliases as written (sorted
    by normalized form), readable mentioning refs (lowest id first, at most ``limit``) and
    how many more there are."""

    id: int
    name: str
    hops: int
    aliases: list[str]
    mentions: list[str]
    mentions_omitted: int


@dataclasses.dataclass(frozen=True, slots=True)
class Relation:
    """A relation between two kept entities (ids), its normalized predicate, who declared
    it and when, and its anchor ref ('' when none)."""

    id: int
    subject: int
    predicate: str
    object: int
    declared_by: str
    declared_at: datetime
    anchor_ref: str


@dataclasses.dataclass(frozen=True, slots=True)
class Neighbourhood:
    """traverse's answer. ``found`` is False when no readable entity has the name; then
    everything else is empty. ``omitted`` names the bounds that cut something
    ("max_hops", "limit")."""

    entity: str
    max_hops: int
    limit: int
    found: bool
    entities: list[Entity]
    relations: list[Relation]
    entities_omitted: int
    omitted: list[str]


MAX_RELATIONS: Final = 256
"""traverse's most relations (the statement fetches one more to know it cut)."""


def _like_substring(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def traverse(lib: Library, tenant_id: TenantId, req: TraverseRequest) -> Neighbourhood:
    """The declared neighbourhood of ``req.entity``: one bounded statement (at most
    ``MAX_HOPS`` hops, 256 entities walked, ``MAX_LIMIT`` entities and mentions each,
    ``MAX_RELATIONS`` relations), refs only, never record text."""
    max_hops = min(max(req.max_hops, 0), MAX_HOPS)
    limit = min(max(req.limit, 1), MAX_LIMIT)
    query = graph.TraverseRequest(
        agent=req.agent_id,
        normalized=normalize(req.entity),
        project_id=req.project_id,
        channel=req.channel,
        source_pattern=_like_substring(req.source_id) if req.source_id else None,
        max_hops=max_hops,
        limit=limit,
        as_of=supersession.parse_as_of(req.as_of) if req.as_of else None,
    )
    # its plan does not depend on the values (keyed index ranges; the scope filters are
    # row filters): the generic plan saves the planning (tests/db/test_traverse_plan.py)
    async with lib.db.tenant_tx(tenant_id, generic_plans=True) as conn:
        rows = await graph.traverse(conn, tenant_id, query)
    return _neighbourhood(req.entity, max_hops, limit, rows)


def _neighbourhood(
    entity: str, max_hops: int, limit: int, rows: graph.TraverseRows
) -> Neighbourhood:
    entities = [
        Entity(
            id=int(item["id"]),
            name=str(item["name"]),
            hops=int(item["hops"]),
            aliases=list(item["aliases"] or []),
            mentions=list(item["mentions"]),
            mentions_omitted=int(item["mentions_total"]) - len(item["mentions"]),
        )
        for item in rows.entities
    ]
    relations = [_relation(item) for item in rows.relations[:MAX_RELATIONS]]
    entities_omitted = rows.reached - len(entities)
    cut = (
        entities_omitted > 0
        or any(e.mentions_omitted for e in entities)
        or len(rows.relations) > MAX_RELATIONS
    )
    omitted = [name for name, on in (("max_hops", rows.beyond_hops), ("limit", cut)) if on]
    return Neighbourhood(
        entity, max_hops, limit, bool(entities), entities, relations, entities_omitted, omitted
    )


def _relation(item: Mapping[str, object]) -> Relation:
    at = item["declared_at"]
    assert isinstance(at, datetime)
    return Relation(
        id=int(str(item["id"])),
        subject=int(str(item["subject"])),
        predicate=str(item["predicate"]),
        object=int(str(item["object"])),
        declared_by=str(item["declared_by"]),
        declared_at=at,
        anchor_ref=str(item["anchor_ref"] or ""),
    )
