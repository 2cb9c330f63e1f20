"""Storage side of reconstruct (queries in ``sql/reconstruct.sql``): the entities a query
names, the fields bundling reads of the candidate rows, and the records a relation walk
reaches (the walk's statement shares traverse's CTEs, so it lives in ``associations``).
Each is one statement, whatever the number of rows."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from service.db.pool import Connection
from service.db.sql import QUERIES, arguments
from service.models import TenantId


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """A reconstruct's read scope (recall's semantics): project None = all, '' = the
    global pool, X = X plus it; channel '' = any; a LIKE pattern on memories' source.id."""

    agent: str
    project_id: str | None
    channel: str
    source_pattern: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Cue:
    """One (term, entity) match of the query: the matched normalized term, the entity's
    id, its name as written and normalized, and its aliases as (written, normalized)."""

    entity_id: int
    term: str
    name: str
    normalized: str
    aliases: tuple[tuple[str, str], ...]


async def cues(
    conn: Connection, tenant_id: TenantId, scope: Scope, query: str, matches: int
) -> list[Cue]:
    values = {
        "tenant_id": tenant_id,
        "agent": scope.agent,
        "project_id": scope.project_id,
        "channel": scope.channel,
        "query": query,
        "matches": matches,
    }
    rows = await conn.fetch(QUERIES["reconstruct_cues"], *arguments("reconstruct_cues", values))
    return [
        Cue(
            int(r["id"]),
            str(r["term"]),
            str(r["name"]),
            str(r["normalized"]),
            tuple((str(a), str(n)) for a, n in as_json(r["aliases"])),
        )
        for r in rows
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Stored:
    """A record as bundling and claims read it: ``kind`` 'mem' or 'ep', its scope,
    message id ('' for none and for episodes), source document, stored timestamp string
    (an episode's start, else its creation), an episode's bounds (None when missing) and
    the stored text (an episode's summary, without a label)."""

    kind: str
    id: int
    project_id: str
    channel: str
    msg_id: str
    source: Any
    stamp: str
    start_time: str | None
    end_time: str | None
    text: str


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """A declared record-to-record relation between two candidates (refs)."""

    subject: str
    predicate: str
    object: str


@dataclasses.dataclass(frozen=True, slots=True)
class Rows:
    """The candidates' stored fields, the record links among them, and whether any of
    them is declared to mention an entity."""

    stored: list[Stored]
    links: list[Link]
    mentioned: bool


async def rows(
    conn: Connection,
    tenant_id: TenantId,
    scope: Scope,
    memories: Sequence[int],
    episodes: Sequence[int],
) -> Rows:
    """One read of what bundling needs (``reconstruct_rows``)."""
    values = {
        "tenant_id": tenant_id,
        "agent": scope.agent,
        "project_id": scope.project_id,
        "channel": scope.channel,
        "memories": list(memories),
        "episodes": list(episodes),
    }
    found = await conn.fetch(QUERIES["reconstruct_rows"], *arguments("reconstruct_rows", values))
    records = [stored(dict(r)) for r in found if r["kind"] in ("mem", "ep")]
    links = sorted(
        {Link(r["subject"], r["predicate"], r["object"]) for r in found if r["kind"] == "link"},
        key=lambda link: (link.subject, link.predicate, link.object),
    )
    mentioned = any(r["kind"] == "mentioned" and r["id"] for r in found)
    return Rows(records, links, mentioned)


def stored(item: dict[str, Any]) -> Stored:
    source = item.get("source")
    return Stored(
        kind=str(item["kind"]),
        id=int(item["id"]),
        project_id=str(item.get("project_id") or ""),
        channel=str(item.get("channel") or ""),
        msg_id=str(item.get("msg_id") or ""),
        source=as_json(source) if isinstance(source, str) else source,
        stamp=str(item.get("stamp") or ""),
        start_time=item.get("start_time"),
        end_time=item.get("end_time"),
        text=str(item.get("text") or ""),
    )


def as_json(value: Any) -> Any:
    """A jsonb value: decoded when the connection hands it over as text."""
    return json.loads(value) if isinstance(value, str) else value
