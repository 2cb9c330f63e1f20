"""Storage of the declared graph's walks (queries in ``sql/walks.sql``): traverse's
neighbourhood and the reconstruct relation walk, which share the scope and the
breadth-first walk (the parts ``graph_scope`` and ``graph_walk``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from service.db import reconstruct
from service.db.pool import Connection
from service.db.sql import QUERIES
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class TraverseRequest:
    """A traverse's start, scope and bounds (read semantics, see the query's legend)."""

    agent: str
    normalized: str
    project_id: str | None
    channel: str
    source_pattern: str | None
    max_hops: int
    limit: int
    as_of: datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TraverseRows:
    """What the traverse statement found: the kept entities and relations as stored
    (JSON objects), how many entities the walk reached, and whether a relation leads
    past the hop range."""

    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    reached: int
    beyond_hops: bool


async def traverse(conn: Connection, tenant_id: TenantId, req: TraverseRequest) -> TraverseRows:
    row = await conn.fetchrow(
        QUERIES["traverse"],
        tenant_id,
        req.agent,
        req.normalized,
        req.project_id,
        req.channel,
        req.source_pattern,
        req.max_hops,
        req.limit,
        req.as_of,
    )
    assert row is not None  # the statement always returns one row
    relations = [
        {**item, "declared_at": datetime.fromisoformat(item["declared_at"])}
        for item in row["relations"]
    ]
    return TraverseRows(row["entities"], relations, int(row["reached"]), bool(row["beyond_hops"]))


@dataclasses.dataclass(frozen=True, slots=True)
class WalkRequest:
    """Where a walk starts (the chosen clusters' records), what it leaves out (the
    candidate pool), and its bounds."""

    start_memories: Sequence[int]
    start_episodes: Sequence[int]
    pool_memories: Sequence[int]
    pool_episodes: Sequence[int]
    max_hops: int
    per_entity: int


@dataclasses.dataclass(frozen=True, slots=True)
class WalkGraph:
    """What ``reconstruct_walk`` loaded: each start ref's mentioned entities, the entities
    reached within the hops (and the 256-entity bound), the readable relations touching
    them ``(id, subject, object, predicate)``, most recently declared first, each reached
    entity's readable mentioning refs (lowest id first, at most ``per_entity``) and those
    records' fields by ref."""

    mentions: dict[str, list[int]]
    reached: frozenset[int]
    edges: list[tuple[int, int, int, str]]
    records: dict[int, list[str]]
    stored: dict[str, reconstruct.Stored]


async def walk_graph(
    conn: Connection, tenant_id: TenantId, scope: reconstruct.Scope, req: WalkRequest
) -> WalkGraph:
    row = await conn.fetchrow(
        QUERIES["reconstruct_walk"],
        tenant_id,
        scope.agent,
        list(req.start_memories),
        scope.project_id,
        scope.channel,
        scope.source_pattern,
        req.max_hops,
        req.per_entity,
        None,  # as_of: reconstruct reads the graph as it stands now
        list(req.pool_memories),
        list(req.pool_episodes),
        list(req.start_episodes),
    )
    assert row is not None  # the statement always returns one row
    mentions: dict[str, list[int]] = {}
    for ref, entity in reconstruct.as_json(row["mentions"]):
        mentions.setdefault(str(ref), []).append(int(entity))
    records: dict[int, list[str]] = {}
    for entity, ref in reconstruct.as_json(row["mentioning"]):
        records.setdefault(int(entity), []).append(str(ref))
    stored = {
        f"{item['kind']}:{item['id']}": reconstruct.stored(item)
        for item in [*reconstruct.as_json(row["memories"]), *reconstruct.as_json(row["episodes"])]
    }
    return WalkGraph(
        mentions=mentions,
        reached=frozenset(int(e) for e in reconstruct.as_json(row["reached"])),
        edges=[
            (int(i), int(s), int(o), str(p)) for i, s, o, p in reconstruct.as_json(row["edges"])
        ],
        records=records,
        stored=stored,
    )
