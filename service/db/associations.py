"""Storage of the declared graph: one function per named query of ``sql/associations.sql``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import asyncpg

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.errors import RecordGone
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class End:
    """One end of a relation (or an anchor): ``kind`` 'entity', 'mem' or 'ep', and its id."""

    kind: str
    id: int


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """Where a declaration is filed: its agent (id), project and channel."""

    agent_id: int
    project_id: str
    channel: str


async def lock_agent_graph(conn: Connection, tenant_id: TenantId, agent_id: int) -> None:
    await conn.execute(QUERIES["lock_agent_graph"], tenant_id, agent_id)


async def record_of_agent(
    conn: Connection, tenant_id: TenantId, agent_id: int, kind: str, record_id: int
) -> bool:
    return bool(
        await conn.fetchval(QUERIES["record_of_agent"], tenant_id, agent_id, kind, record_id)
    )


async def resolve_entity(
    conn: Connection, tenant_id: TenantId, scope: Scope, normalized: str, exact_only: bool
) -> int | None:
    value = await conn.fetchval(
        QUERIES["resolve_entity"],
        tenant_id,
        scope.agent_id,
        scope.project_id,
        scope.channel,
        normalized,
        exact_only,
    )
    return None if value is None else int(value)


async def upsert_entity(
    conn: Connection, tenant_id: TenantId, scope: Scope, name: str, normalized: str
) -> tuple[int, bool]:
    row = await conn.fetchrow(
        QUERIES["upsert_entity"],
        tenant_id,
        scope.agent_id,
        scope.project_id,
        scope.channel,
        name,
        normalized,
    )
    assert row is not None  # an upsert always returns its row
    return int(row["id"]), bool(row["created"])


async def alias_clash(
    conn: Connection, tenant_id: TenantId, scope: Scope, normalized: str, entity_id: int
) -> bool:
    return bool(
        await conn.fetchval(
            QUERIES["alias_clash"],
            tenant_id,
            scope.agent_id,
            scope.project_id,
            scope.channel,
            normalized,
            entity_id,
        )
    )


async def insert_alias(
    conn: Connection, tenant_id: TenantId, entity_id: int, alias: str, normalized: str
) -> None:
    await conn.execute(QUERIES["insert_alias"], tenant_id, entity_id, alias, normalized)


async def insert_mention(conn: Connection, tenant_id: TenantId, entity_id: int, ref: End) -> None:
    try:
        await conn.execute(QUERIES["insert_mention"], tenant_id, entity_id, ref.kind, ref.id)
    except asyncpg.ForeignKeyViolationError as error:
        raise RecordGone(f"{ref.kind}:{ref.id} was deleted") from error


async def upsert_relation(
    conn: Connection,
    tenant_id: TenantId,
    scope: Scope,
    triple: tuple[End, str, End],
    anchor: End | None,
) -> int:
    """The relation's id; RecordGone when a record it names was deleted under it."""
    subject, predicate, obj = triple
    values = {
        "tenant_id": tenant_id,
        "agent_id": scope.agent_id,
        "project_id": scope.project_id,
        "channel": scope.channel,
        "subject_kind": subject.kind,
        "subject_id": subject.id,
        "predicate": predicate,
        "object_kind": obj.kind,
        "object_id": obj.id,
        "anchor_kind": "" if anchor is None else anchor.kind,
        "anchor_id": 0 if anchor is None else anchor.id,
    }
    try:
        value = await conn.fetchval(
            QUERIES["upsert_relation"], *arguments("upsert_relation", values)
        )
    except asyncpg.ForeignKeyViolationError as error:
        raise RecordGone("a record the relation names was deleted") from error
    return int(value)


async def retract_relations(
    conn: Connection, tenant_id: TenantId, agent_id: int, ids: Sequence[int]
) -> int:
    return int(await conn.fetchval(QUERIES["retract_relations"], tenant_id, agent_id, list(ids)))


async def retract_mention(
    conn: Connection, tenant_id: TenantId, agent_id: int, entity_id: int, ref: End
) -> int:
    return int(
        await conn.fetchval(
            QUERIES["retract_mention"], tenant_id, agent_id, entity_id, ref.kind, ref.id
        )
    )


@dataclasses.dataclass(frozen=True, slots=True)
class GraphCounts:
    entities: int
    mentions: int
    relations: int


async def graph_counts(conn: Connection, tenant_id: TenantId, agent_id: int | None) -> GraphCounts:
    row = await conn.fetchrow(QUERIES["graph_counts"], tenant_id, agent_id)
    assert row is not None  # an aggregate always answers
    return GraphCounts(int(row["entities"]), int(row["mentions"]), int(row["relations"]))


async def export_entities(
    conn: Connection, tenant_id: TenantId, agent_id: int | None, after: int, limit: int
) -> list[Any]:
    return list(await conn.fetch(QUERIES["export_entities"], tenant_id, agent_id, after, limit))


async def export_mentions(
    conn: Connection,
    tenant_id: TenantId,
    agent_id: int | None,
    after: tuple[int, str, int],
    limit: int,
) -> list[Any]:
    return list(await conn.fetch(QUERIES["export_mentions"], tenant_id, agent_id, *after, limit))


async def export_relations(
    conn: Connection, tenant_id: TenantId, agent_id: int | None, after: int, limit: int
) -> list[Any]:
    return list(await conn.fetch(QUERIES["export_relations"], tenant_id, agent_id, after, limit))


async def record_by_key(
    conn: Connection,
    tenant_id: TenantId,
    kind: str,
    scope: Scope,
    digest: bytes,
) -> int | None:
    value = await conn.fetchval(
        QUERIES["record_by_key"],
        tenant_id,
        kind,
        scope.agent_id,
        scope.project_id,
        scope.channel,
        digest,
    )
    return None if value is None else int(value)


async def named_record_keys(conn: Connection, tenant_id: TenantId, agent_id: int) -> list[Any]:
    return list(await conn.fetch(QUERIES["named_record_keys"], tenant_id, agent_id))


async def delete_agent_graph(conn: Connection, tenant_id: TenantId, agent_id: int) -> None:
    await conn.execute(QUERIES["delete_agent_graph"], tenant_id, agent_id)
