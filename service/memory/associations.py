"""The declared graph of an agent (docs/tools.md, "declare_associations", "traverse"):
entities with aliases, mentions (entity <-> record) and relations (subject, predicate,
object; each end an entity or a record). The server extracts and infers nothing.

A declaration never fails for one bad item: each malformed or refused item is reported in
``dropped`` (its path and why) and skipped. Answers are typed records; the MCP boundary
renders them (``service.mcp.render.associations``). Walking the graph is
``service.memory.traverse``.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Final

from service.db import agents, associations as graph
from service.db.pool import Connection
from service.errors import RecordGone, ServiceError
from service.memory import pauses, supersession
from service.memory.library import Library
from service.models import TenantId

MAX_ITEMS: Final = 64
"""Entities, relations, and retract items of each kind per call (docs/reliability.md)."""
MAX_ALIASES: Final = 32
"""Aliases per entity."""
MAX_CHARS: Final = 256
"""A name, alias, predicate or endpoint, after trimming."""

_REF: Final = re.compile(r"(mem|ep):(\d+)")
_MAX_ROW_ID: Final = 2**63 - 1
_WHITESPACE: Final = re.compile(r"\s+")
ENDPOINT: Final = "endpoint must be an entity name or a record ref"
MENTION: Final = "needs an integer entity and a record ref"


def normalize(text: str) -> str:
    """NFKC, casefold, whitespace runs collapsed to one space, trimmed: the form names,
    aliases and predicates are compared (and predicates stored) in."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WHITESPACE.sub(" ", folded).strip()


def parse_ref(text: str) -> graph.End | None:
    """``mem:N`` / ``ep:N`` (digits only, leading zeros allowed) as a canonical end, or None."""
    match = _REF.fullmatch(text)
    if match is None:
        return None
    row_id = int(match.group(2))
    return graph.End(match.group(1), row_id) if 0 < row_id <= _MAX_ROW_ID else None


def format_ref(end: graph.End) -> str:
    return f"{end.kind}:{end.id}"


@dataclasses.dataclass(frozen=True, slots=True)
class Dropped:
    """An item that was skipped: its path in the request and why."""

    item: str
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class DeclaredEntity:
    """An entity of the request: its id, its name as the caller spelled it, and whether
    this call registered it."""

    id: int
    name: str
    created: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Retracted:
    relations: int
    mentions: int


@dataclasses.dataclass(frozen=True, slots=True)
class Declared:
    """What a declaration did: entities in request order, mentions recorded, relation ids
    in request order, what was dropped, and what was retracted (None when nothing was
    asked to be)."""

    entities: list[DeclaredEntity]
    mentions: int
    relations: list[int]
    dropped: list[Dropped]
    retracted: Retracted | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Declaration:
    """One declaration: the agent, the associations and retract objects as sent (read
    leniently: anything malformed is dropped), the anchor ref, and the scope."""

    agent_id: str
    associations: object = None
    anchor_ref: str = ""
    retract: object = None
    project_id: str = ""
    channel: str = ""


def _text(value: object) -> str | None:
    """The trimmed string, or None when it is not a usable one."""
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed if trimmed and len(trimmed) <= MAX_CHARS else None


def _bounded(
    items: object, path: str, dropped: list[Dropped], cap: int = MAX_ITEMS, what: str = "item"
) -> Iterator[tuple[int, object]]:
    """The items of a list up to ``cap`` with their index; each past it is dropped."""
    if items is None:
        return
    if not isinstance(items, list):
        dropped.append(Dropped(path, "must be a list"))
        return
    for index, item in enumerate(items):
        if index >= cap:
            dropped.append(Dropped(f"{path}[{index}]", f"beyond the {cap}-{what} bound"))
        else:
            yield index, item


@dataclasses.dataclass(slots=True)
class _Run:
    """One declaration's transaction: the connection, where it is filed, and its answer."""

    conn: Connection
    tenant_id: TenantId
    scope: graph.Scope
    anchor: graph.End | None
    dropped: list[Dropped] = dataclasses.field(default_factory=list)
    mentions: int = 0

    async def entity(self, name: str, exact_only: bool) -> tuple[int, bool]:
        """The entity ``name`` resolves to in the scope, registered in it when new."""
        normalized = normalize(name)
        found = await graph.resolve_entity(
            self.conn, self.tenant_id, self.scope, normalized, exact_only
        )
        if found is not None:
            return found, False
        return await graph.upsert_entity(self.conn, self.tenant_id, self.scope, name, normalized)

    async def record(self, ref: graph.End) -> bool:
        return await graph.record_of_agent(
            self.conn, self.tenant_id, self.scope.agent_id, ref.kind, ref.id
        )


NAME: Final = "name must be a nonempty string"
TEXT: Final = "must be a nonempty string"
PREDICATE: Final = "predicate must be a nonempty string"


async def _declare_entity(run: _Run, path: str, item: object) -> DeclaredEntity | None:
    name = _text(item.get("name")) if isinstance(item, Mapping) else None
    if name is None or not isinstance(item, Mapping):
        run.dropped.append(Dropped(path, NAME))
        return None
    aliases = list(
        _bounded(item.get("aliases"), f"{path}.aliases", run.dropped, MAX_ALIASES, "alias")
    )
    carries = any(_text(alias) is not None for _, alias in aliases)
    entity_id, created = await run.entity(name, exact_only=carries)
    for j, alias in aliases:
        await _declare_alias(run, f"{path}.aliases[{j}]", alias, entity_id)
    if run.anchor is not None:
        await graph.insert_mention(run.conn, run.tenant_id, entity_id, run.anchor)
        run.mentions += 1
    return DeclaredEntity(entity_id, name, created)


async def _declare_alias(run: _Run, path: str, alias: object, entity_id: int) -> None:
    written = _text(alias)
    if written is None:
        run.dropped.append(Dropped(path, TEXT))
        return
    normalized = normalize(written)
    if await graph.alias_clash(run.conn, run.tenant_id, run.scope, normalized, entity_id):
        run.dropped.append(Dropped(path, "already names another entity in this scope"))
        return
    await graph.insert_alias(run.conn, run.tenant_id, entity_id, written, normalized)


async def _endpoint(run: _Run, value: object) -> graph.End | str:
    """A relation end: this agent's record, or an entity (registered if new); or why not."""
    if isinstance(value, str) and _REF.fullmatch(value.strip()):
        ref = parse_ref(value.strip())
        if ref is None or not await run.record(ref):
            return f"{value.strip()} is not a record of this agent"
        return ref
    name = _text(value)
    if name is None:
        return ENDPOINT
    return graph.End("entity", (await run.entity(name, exact_only=False))[0])


async def _declare_relation(run: _Run, path: str, item: object) -> int | None:
    """Checked in CPersona's order: the item, its predicate, its subject, its object."""
    if not isinstance(item, Mapping):
        run.dropped.append(Dropped(path, "must be an object"))
        return None
    predicate = _text(item.get("predicate"))
    if predicate is None or not normalize(predicate):
        run.dropped.append(Dropped(path, PREDICATE))
        return None
    ends: list[graph.End] = []
    for side in ("subject", "object"):
        end = await _endpoint(run, item.get(side))
        if isinstance(end, str):
            run.dropped.append(Dropped(f"{path}.{side}", end))
            return None
        ends.append(end)
    triple = (ends[0], normalize(predicate), ends[1])
    if _supersedes(triple):
        verdict = await supersession.check(
            run.conn, run.tenant_id, (ends[0].kind, ends[0].id), (ends[1].kind, ends[1].id)
        )
        if isinstance(verdict, str):
            run.dropped.append(Dropped(path, verdict))
            return None
        if verdict is not None:
            return verdict
    return await graph.upsert_relation(run.conn, run.tenant_id, run.scope, triple, run.anchor)


def _supersedes(triple: tuple[graph.End, str, graph.End]) -> bool:
    """A supersession (docs/tools.md, "Facts that change"): ``supersedes`` between two
    records. With an entity end it is an ordinary relation."""
    subject, predicate, obj = triple
    return predicate == supersession.PREDICATE and "entity" not in (subject.kind, obj.kind)


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_ROW_ID


async def _retract(run: _Run, retract: object) -> Retracted | None:
    if not retract:
        return None
    if not isinstance(retract, Mapping):
        run.dropped.append(Dropped("retract", "must be an object"))
        return None
    ids: list[int] = []
    for index, value in _bounded(retract.get("relations"), "retract.relations", run.dropped):
        if _is_id(value):
            ids.append(int(str(value)))
        else:
            run.dropped.append(Dropped(f"retract.relations[{index}]", "must be an integer id"))
    relations = await graph.retract_relations(run.conn, run.tenant_id, run.scope.agent_id, ids)
    mentions = 0
    for index, value in _bounded(retract.get("mentions"), "retract.mentions", run.dropped):
        pair = _mention_pair(value)
        if pair is None:
            run.dropped.append(Dropped(f"retract.mentions[{index}]", MENTION))
            continue
        mentions += await graph.retract_mention(
            run.conn, run.tenant_id, run.scope.agent_id, pair[0], pair[1]
        )
    return Retracted(relations, mentions)


def _mention_pair(value: object) -> tuple[int, graph.End] | None:
    if not isinstance(value, Mapping):
        return None
    entity, ref = value.get("entity"), value.get("ref")
    end = parse_ref(ref.strip()) if isinstance(ref, str) else None
    if end is None or not _is_id(entity):
        return None
    return int(str(entity)), end


async def _anchor(run: _Run, anchor_ref: str) -> None:
    """Set ``run.anchor`` when ``anchor_ref`` is a record of this agent; drop it otherwise."""
    written = anchor_ref.strip()
    if not written:
        return
    ref = parse_ref(written)
    if ref is not None and await run.record(ref):
        run.anchor = ref
    else:
        run.dropped.append(Dropped("anchor_ref", f"{written} is not a record of this agent"))


async def _declare_in(run: _Run, decl: Declaration) -> Declared:
    await _anchor(run, decl.anchor_ref)
    assoc = decl.associations
    if assoc is not None and not isinstance(assoc, Mapping):
        run.dropped.append(Dropped("associations", "must be an object"))
        assoc = None
    entities: list[DeclaredEntity] = []
    relations: list[int] = []
    if assoc is not None:
        for i, item in _bounded(assoc.get("entities"), "entities", run.dropped):
            entity = await _declare_entity(run, f"entities[{i}]", item)
            if entity is not None:
                entities.append(entity)
        for i, item in _bounded(assoc.get("relations"), "relations", run.dropped):
            relation = await _declare_relation(run, f"relations[{i}]", item)
            if relation is not None:
                relations.append(relation)
    retracted = await _retract(run, decl.retract)  # after the declarations, as CPersona
    return Declared(entities, run.mentions, relations, run.dropped, retracted)


ATTEMPTS: Final = 2
"""A declaration whose record is deleted under it (a foreign-key check fails) runs once
more: the second run sees the record gone and drops the items that named it."""


async def declare(
    lib: Library,
    tenant_id: TenantId,
    decl: Declaration,
    guard: pauses.PauseGuard | None = None,
) -> Declared:
    """Declare entities, aliases, mentions and relations, and retract relations and
    mentions, for ``decl.agent_id`` in one transaction (under the agent's graph lock, so
    the alias rule holds against concurrent declarations). Idempotent: a repeat returns
    the same ids. With ``guard`` a persistence pause raises ``pauses.WritePaused`` before
    anything is written."""
    for attempt in range(ATTEMPTS):
        try:
            return await _declare_once(lib, tenant_id, decl, guard)
        except RecordGone:
            if attempt + 1 == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def _declare_once(
    lib: Library, tenant_id: TenantId, decl: Declaration, guard: pauses.PauseGuard | None
) -> Declared:
    async with lib.db.tenant_tx(tenant_id) as conn:
        await pauses.obey(conn, tenant_id, guard)
        agent = await agents.ensure_agent(conn, tenant_id, decl.agent_id)
        await graph.lock_agent_graph(conn, tenant_id, agent)
        scope = graph.Scope(agent, decl.project_id, decl.channel)
        return await _declare_in(run=_Run(conn, tenant_id, scope, None), decl=decl)


async def declare_rider(
    lib: Library,
    tenant_id: TenantId,
    agent_id: str,
    anchor_ref: str,
    associations: Mapping[str, object],
    *,
    scope: tuple[str, str],
) -> Declared:
    """store's ``associations`` rider: the declaration anchored on the stored (or echoed)
    row, in the store's project and channel, in a transaction of its own. A failure is
    reported as ``dropped: [{item: "associations", reason: "declaration failed: ..."}]``,
    never raised: the memory is already stored."""
    decl = Declaration(
        agent_id=agent_id,
        associations=associations,
        anchor_ref=anchor_ref,
        project_id=scope[0],
        channel=scope[1],
    )
    try:
        return await declare(lib, tenant_id, decl)
    except ServiceError as error:
        failed = Dropped("associations", f"declaration failed: {error}")
        return Declared([], 0, [], [failed])
