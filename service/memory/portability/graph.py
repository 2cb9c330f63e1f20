"""The declared graph in an export and an import (docs/portability.md, "The format"):
``entity``, ``mention`` and ``relation`` records of ``cpersona-export/1.1``, after the
records they name, keyed as CPersona 2.6 writes them (record ends as ``mem:N`` / ``ep:N``
of the exported ids, entity ends by the exported entity id)."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from service.db import associations as graph
from service.db.pool import Connection
from service.memory import supersession
from service.memory.associations import MAX_ITEMS, format_ref, normalize, parse_ref
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


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(record: JsonObject, key: str) -> str:
    value = record.get(key)
    return value if isinstance(value, str) else ""


class Placed(Protocol):
    """An imported row's bucket (``ImportMemory``, ``ImportEpisode``)."""

    @property
    def agent_id(self) -> int: ...
    @property
    def project_id(self) -> str: ...
    @property
    def channel(self) -> str: ...


@dataclasses.dataclass
class GraphImport:
    """Re-creates a 1.1 file's declarations in the import's transaction.

    The file's records name rows by the file's ids; :meth:`remember` keeps, for each memory
    and episode line, where its row lands (agent, project, channel and the text's MD5), and
    a graph record's ref is resolved to the row there (the inserted one, or the duplicate
    already stored). A record whose entity or record is not in the file (or was skipped) is
    skipped and noted. Entities are matched by normalized name in their exact scope, as a
    declaration registers them; a clashing alias is left out."""

    conn: Connection
    tenant_id: TenantId
    keys: dict[str, tuple[graph.Scope, bytes]] = dataclasses.field(default_factory=dict)
    entities: dict[int, tuple[int, graph.Scope]] = dataclasses.field(default_factory=dict)
    imported: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    active: bool = False
    """Set when the header declares graph records: only then are rows remembered."""

    def remember(self, kind: str, file_id: object, row: Placed, text: str) -> None:
        """Where the file's record ``kind:file_id`` lands: ``row``'s bucket, ``text``'s MD5."""
        if self.active and (number := _int(file_id)) is not None:
            scope = graph.Scope(row.agent_id, row.project_id, row.channel)
            self.keys[f"{kind}:{number}"] = (scope, hashlib.md5(text.encode()).digest())

    def place(self, ref: str, scope: graph.Scope, digest: bytes) -> None:
        """Where the record ``ref`` lands, given its bucket and text MD5 directly (a merge)."""
        self.keys[ref] = (scope, digest)

    async def _record(self, ref: str) -> graph.End | None:
        end = parse_ref(ref)
        key = None if end is None else self.keys.get(format_ref(end))
        if end is None or key is None:
            return None
        found = await graph.record_by_key(self.conn, self.tenant_id, end.kind, key[0], key[1])
        return None if found is None else graph.End(end.kind, found)

    async def _end(self, kind: object, number: object) -> graph.End | None:
        if kind == "entity":
            entity = self.entities.get(_int(number) or 0)
            return None if entity is None else graph.End("entity", entity[0])
        return await self._record(f"{kind}:{number}")

    async def add(self, kind: str, record: JsonObject, agent: int | None) -> str | None:
        """Import one graph record (``agent``: its target agent's id, None for a mention);
        the reason when it was skipped."""
        if kind == "entity" and agent is not None:
            return await self._entity(record, agent)
        if kind == "mention":
            return await self._mention(record)
        if kind == "relation" and agent is not None:
            return await self._relation(record, agent)
        return "missing agent_id"

    async def _entity(self, record: JsonObject, agent: int) -> str | None:
        name, number = _text(record, "name").strip(), _int(record.get("id"))
        if not name or number is None:
            return "needs an id and a name"
        scope = graph.Scope(agent, _text(record, "project_id"), _text(record, "channel"))
        entity, _ = await graph.upsert_entity(
            self.conn, self.tenant_id, scope, name, normalize(name)
        )
        self.entities[number] = (entity, scope)
        aliases = record.get("aliases")
        for alias in aliases[:MAX_ITEMS] if isinstance(aliases, list) else []:
            if isinstance(alias, str) and alias.strip():
                folded = normalize(alias)
                if not await graph.alias_clash(self.conn, self.tenant_id, scope, folded, entity):
                    await graph.insert_alias(
                        self.conn, self.tenant_id, entity, alias.strip(), folded
                    )
        self.imported["entity"] += 1
        return None

    async def _mention(self, record: JsonObject) -> str | None:
        entity = self.entities.get(_int(record.get("entity")) or 0)
        ref = await self._record(_text(record, "ref"))
        if entity is None or ref is None:
            return "names an entity or a record that is not in this file"
        await graph.insert_mention(self.conn, self.tenant_id, entity[0], ref)
        self.imported["mention"] += 1
        return None

    async def _relation(self, record: JsonObject, agent: int) -> str | None:
        subject = await self._end(record.get("subject_kind"), record.get("subject_id"))
        obj = await self._end(record.get("object_kind"), record.get("object_id"))
        anchor_ref = _text(record, "anchor_ref")
        anchor = await self._record(anchor_ref) if anchor_ref else None
        predicate = normalize(_text(record, "predicate"))
        if subject is None or obj is None or not predicate or (anchor_ref and anchor is None):
            return "names an entity or a record that is not in this file"
        scope = graph.Scope(agent, _text(record, "project_id"), _text(record, "channel"))
        verdict = await self._supersession(agent, (subject, predicate, obj))
        if isinstance(verdict, str):
            return verdict
        if verdict is None:
            await graph.upsert_relation(
                self.conn, self.tenant_id, scope, (subject, predicate, obj), anchor
            )
        self.imported["relation"] += 1
        return None

    async def _supersession(
        self, agent: int, triple: tuple[graph.End, str, graph.End]
    ) -> int | str | None:
        """A supersession obeys the rules of a declaration (docs/tools.md, "Facts that
        change"), under the target agent's graph lock: why it is skipped, the id of the
        same supersession already there (a repeat: nothing to write), or None."""
        subject, predicate, obj = triple
        if predicate != supersession.PREDICATE or "entity" in (subject.kind, obj.kind):
            return None
        await graph.lock_agent_graph(self.conn, self.tenant_id, agent)
        return await supersession.check(
            self.conn, self.tenant_id, (subject.kind, subject.id), (obj.kind, obj.id)
        )


async def carry(
    conn: Connection, tenant_id: TenantId, source: int, target: int
) -> tuple[list[JsonObject], GraphImport]:
    """Before a merge: ``source``'s declarations as records, and an importer that will
    re-create them for ``target`` once the records they name have been copied (found in
    the target's same bucket by their text's MD5). Read first, because a move deletes the
    source records, and with them their declarations."""
    records = [r async for batch in graph_batches(conn, tenant_id, source, 500) for r in batch]
    importer = GraphImport(conn, tenant_id, active=True)
    for key in await graph.named_record_keys(conn, tenant_id, source):
        scope = graph.Scope(target, key["project_id"], key["channel"])
        importer.place(f"{key['kind']}:{key['id']}", scope, bytes(key["digest"]))
    return records, importer


async def carried(importer: GraphImport, records: list[JsonObject], target: int) -> None:
    """After a merge: re-create the records :func:`carry` read, in ``target``."""
    for record in records:
        await importer.add(str(record["_type"]), record, target)
