"""The ``supersedes`` list of store and archive_episode (docs/tools.md, "Facts that
change"): the new record declared as superseding each listed record of the agent, after
the record commits, in a transaction of its own under the agent's graph lock, with the
rules of ``declare_associations`` (``supersession.check``). A refused ref is reported in
``dropped`` (``supersedes[i]`` and why), never a half-written chain; the record stays
written whatever the list does.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from service.db import agents, associations as graph
from service.db.supersession import Ref
from service.errors import RecordGone, ServiceError
from service.memory import supersession
from service.memory.associations import Dropped, parse_ref
from service.memory.library import Library
from service.models import TenantId

ITEM: Final = "supersedes"


@dataclasses.dataclass(frozen=True, slots=True)
class Superseding:
    """What a ``supersedes`` list declared: relation ids in list order, and the drops."""

    relations: list[int]
    dropped: list[Dropped]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Rider:
    """The new record (``mem:N`` / ``ep:N``), the list as sent, and the scope of the write."""

    agent_id: str
    newer: Ref
    refs: object
    project_id: str = ""
    channel: str = ""


def _listed(refs: object, dropped: list[Dropped]) -> list[tuple[int, object]]:
    if not isinstance(refs, list):
        dropped.append(Dropped(ITEM, "must be a list"))
        return []
    bound = supersession.MAX_REFS
    for index in range(bound, len(refs)):
        dropped.append(Dropped(f"{ITEM}[{index}]", f"beyond the {bound}-item bound"))
    return list(enumerate(refs[:bound]))


async def declare(lib: Library, tenant_id: TenantId, rider: Rider) -> Superseding:
    """Declare the rider (one retry when a named record is deleted under it, as
    ``declare_associations``); a failure of the whole transaction is one drop."""
    for attempt in range(2):
        try:
            return await _declare_once(lib, tenant_id, rider)
        except RecordGone:
            if attempt:
                break
        except ServiceError as error:
            return Superseding([], [Dropped(ITEM, f"declaration failed: {error}")])
    return Superseding([], [Dropped(ITEM, "declaration failed: a record was deleted")])


async def _declare_once(lib: Library, tenant_id: TenantId, rider: Rider) -> Superseding:
    dropped: list[Dropped] = []
    relations: list[int] = []
    async with lib.db.tenant_tx(tenant_id) as conn:
        agent = await agents.ensure_agent(conn, tenant_id, rider.agent_id)
        await graph.lock_agent_graph(conn, tenant_id, agent)
        scope = graph.Scope(agent, rider.project_id, rider.channel)
        anchor = graph.End(*rider.newer)
        for index, value in _listed(rider.refs, dropped):
            path = f"{ITEM}[{index}]"
            older = parse_ref(value.strip()) if isinstance(value, str) else None
            if older is None or not await graph.record_of_agent(
                conn, tenant_id, agent, older.kind, older.id
            ):
                dropped.append(Dropped(path, f"{value} is not a record of this agent"))
                continue
            verdict = await supersession.check(conn, tenant_id, rider.newer, (older.kind, older.id))
            if isinstance(verdict, str):
                dropped.append(Dropped(path, verdict))
                continue
            if verdict is None:
                triple = (anchor, supersession.PREDICATE, older)
                verdict = await graph.upsert_relation(conn, tenant_id, scope, triple, anchor)
            relations.append(verdict)
    return Superseding(relations, dropped)
