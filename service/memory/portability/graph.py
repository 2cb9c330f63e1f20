"""The declared graph in an export (docs/portability.md, "The format"): ``entity``,
``mention`` and ``relation`` records of ``cpersona-export/1.1``, after the records they
name, keyed as CPersona 2.6 writes them (record ends as ``mem:N`` / ``ep:N`` of the
exported ids, entity ends by the exported entity id)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from service.db import associations as graph
from service.db.pool import Connection
from service.memory.portability.jsonl import cpersona_time
from service.models import JsonObject, TenantId


def entity_record(row: Any) -> JsonObject:
    return {
        "_type": "entity",
        "id": row["id"],
        "agent_id": row["agent_name"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "name": row["name"],
        "declared_by": row["declared_by"],
        "created_at": cpersona_time(row["created_at"]),
        "aliases": list(row["aliases"]),
    }


def mention_record(row: Any) -> JsonObject:
    return {
        "_type": "mention",
        "entity": row["entity_id"],
        "ref": f"{row['ref_kind']}:{row['ref_id']}",
        "declared_by": row["declared_by"],
        "created_at": cpersona_time(row["created_at"]),
    }


def relation_record(row: Any) -> JsonObject:
    anchor = f"{row['anchor_kind']}:{row['anchor_id']}" if row["anchor_kind"] else ""
    return {
        "_type": "relation",
        "id": row["id"],
        "agent_id": row["agent_name"],
        "project_id": row["project_id"],
        "channel": row["channel"],
        "subject_kind": row["subject_kind"],
        "subject_id": row["subject_id"],
        "predicate": row["predicate"],
        "object_kind": row["object_kind"],
        "object_id": row["object_id"],
        "anchor_ref": anchor,
        "declared_by": row["declared_by"],
        "declared_at": cpersona_time(row["declared_at"]),
    }


async def graph_batches(
    conn: Connection, tenant_id: TenantId, agent: int | None, batch: int
) -> AsyncIterator[list[JsonObject]]:
    """Every entity, then every mention, then every relation of ``agent`` (None: all),
    ``batch`` records at a time (keyset pages in the export's snapshot)."""
    after = 0
    while rows := await graph.export_entities(conn, tenant_id, agent, after, batch):
        yield [entity_record(row) for row in rows]
        after = int(rows[-1]["id"])
    key: tuple[int, str, int] = (0, "", 0)
    while rows := await graph.export_mentions(conn, tenant_id, agent, key, batch):
        yield [mention_record(row) for row in rows]
        last = rows[-1]
        key = (int(last["entity_id"]), str(last["ref_kind"]), int(last["ref_id"]))
    after = 0
    while rows := await graph.export_relations(conn, tenant_id, agent, after, batch):
        yield [relation_record(row) for row in rows]
        after = int(rows[-1]["id"])
