"""Wire shapes of the declared graph (docs/tools.md, "declare_associations", "traverse",
"store"'s ``associations`` rider): keys in wire order, optional keys only when they say
something."""

from __future__ import annotations

from datetime import UTC

from service.memory.associations import Declared
from service.memory.traverse import Entity, Neighbourhood, Relation
from service.models import JsonObject

EMPTY: JsonObject = {"entities": [], "mentions": 0, "relations": [], "dropped": []}
DECLARE_PAUSED: JsonObject = {"ok": True, "result": "skipped", **EMPTY}
"""declare_associations' skipped body under a pause (the dispatcher marks it skipped)."""


def rider(declared: Declared) -> JsonObject:
    """``{entities, mentions, relations, dropped}``: store's ``associations`` key, and the
    counts of a declare_associations answer."""
    return {
        "entities": [
            {"id": entity.id, "name": entity.name, "created": entity.created}
            for entity in declared.entities
        ],
        "mentions": declared.mentions,
        "relations": list(declared.relations),
        "dropped": [{"item": d.item, "reason": d.reason} for d in declared.dropped],
    }


def declared(done: Declared) -> JsonObject:
    """``{ok, result: declared, entities, mentions, relations, dropped, retracted?}``."""
    body: JsonObject = {"ok": True, "result": "declared", **rider(done)}
    if done.retracted is not None:
        body["retracted"] = {
            "relations": done.retracted.relations,
            "mentions": done.retracted.mentions,
        }
    return body


def neighbourhood(found: Neighbourhood) -> JsonObject:
    """``{entity, max_hops, limit, entities, relations, entities_omitted?, bounds?}``, or
    ``reason: no_such_entity`` with nothing found."""
    body: JsonObject = {
        "entity": found.entity,
        "max_hops": found.max_hops,
        "limit": found.limit,
        "entities": [_entity(entity) for entity in found.entities],
        "relations": [_relation(relation) for relation in found.relations],
    }
    if not found.found:
        body["reason"] = "no_such_entity"
        return body
    if found.entities_omitted:
        body["entities_omitted"] = found.entities_omitted
    if found.omitted:
        body["bounds"] = {"omitted": list(found.omitted)}
    return body


def _entity(entity: Entity) -> JsonObject:
    body: JsonObject = {"id": entity.id, "name": entity.name, "hops": entity.hops}
    if entity.aliases:
        body["aliases"] = list(entity.aliases)
    if entity.mentions:
        body["mentions"] = list(entity.mentions)
    if entity.mentions_omitted:
        body["mentions_omitted"] = entity.mentions_omitted
    return body


def _relation(relation: Relation) -> JsonObject:
    body: JsonObject = {
        "id": relation.id,
        "subject": relation.subject,
        "predicate": relation.predicate,
        "object": relation.object,
        "declared_by": relation.declared_by,
        "declared_at": relation.declared_at.astimezone(UTC).isoformat(),
    }
    if relation.anchor_ref:
        body["anchor_ref"] = relation.anchor_ref
    return body
