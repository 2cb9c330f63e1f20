"""The ``supersession`` health check (docs/health.md; docs/tools.md, "Facts that change"):
chains that the declaration rules keep whole can still break through paths that bypass
them (a content repair merging two records of one chain, a hand edit, a migration's data).

Per agent with supersessions: **cycles** (following successors comes back; fix: retract
the most recently declared relation of each cycle, which makes the chain a line again),
**dangling** ends (a relation naming a record that is not the agent's; fix: retract it),
and **out of order** (a successor whose ``valid_from`` is before its predecessor's, so the
older record's ``valid_to`` comes before its ``valid_from`` and it never holds: report
only, the agent's declaration may be deliberate).
"""

from __future__ import annotations

import dataclasses

from service.db import associations as graph, supersession as store
from service.db.pool import Connection
from service.db.supersession import Link, Ref
from service.memory import supersession
from service.memory.health.base import Findings, Repairs, Scope

REPORTED = 20
"""Refs and ids listed per kind of defect; the counts are whole."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Defects:
    agent_id: int
    cycles: list[list[Ref]]
    breakers: list[int]  # one relation per cycle: the one the fix retracts
    dangling: list[int]
    out_of_order: list[Link]


def _cycles(links: list[Link]) -> tuple[list[list[Ref]], list[int]]:
    """Each cycle of the successor map once, and the newest relation of each."""
    successor = {link.older: link for link in links}
    done: set[Ref] = set()
    cycles: list[list[Ref]] = []
    breakers: list[int] = []
    for start in sorted(successor):
        path: list[Ref] = []
        step: Ref | None = start
        while step is not None and step not in done and step not in path:
            path.append(step)
            step = successor[step].newer if step in successor else None
        if step is not None and step in path:
            cycle = path[path.index(step) :]
            cycles.append(cycle)
            breakers.append(max(successor[ref].id for ref in cycle))
        done.update(path)
    return cycles, breakers


async def _defects(conn: Connection, scope: Scope) -> list[_Defects]:
    found: list[_Defects] = []
    for agent_id, name in await store.linked_agents(conn, scope.tenant_id):
        if scope.agent is not None and name != scope.agent:
            continue
        links = await supersession.all_links(conn, scope.tenant_id, name)
        ends = sorted({link.newer for link in links} | {link.older for link in links})
        times = await store.record_times(conn, scope.tenant_id, name, ends)
        starts = {t.ref: supersession.valid_from(t) for t in times}
        dangling = [
            link.id for link in links if link.newer not in starts or link.older not in starts
        ]
        whole = [link for link in links if link.id not in dangling]
        cycles, breakers = _cycles(whole)
        late = [link for link in whole if starts[link.newer] < starts[link.older]]
        if cycles or dangling or late:
            found.append(_Defects(agent_id, cycles, breakers, dangling, late))
    return found


async def supersession_chains(conn: Connection, scope: Scope) -> Findings | None:
    found = await _defects(conn, scope)
    if not found:
        return None
    cycles = [cycle for d in found for cycle in d.cycles]
    dangling = [relation for d in found for relation in d.dangling]
    late = [link for d in found for link in d.out_of_order]
    return {
        "type": "supersession_defects",
        "cycles": len(cycles),
        "cycle_refs": [[supersession.ref_text(r) for r in c] for c in cycles[:REPORTED]],
        "dangling": len(dangling),
        "dangling_relations": dangling[:REPORTED],
        "out_of_order": len(late),
        "out_of_order_relations": [link.id for link in late[:REPORTED]],
        "repairable": len(cycles) + len(dangling),
    }


async def fix_supersession_chains(conn: Connection, scope: Scope) -> Repairs:
    deleted = 0
    for defects in await _defects(conn, scope):
        await graph.lock_agent_graph(conn, scope.tenant_id, defects.agent_id)
        doomed = sorted(set(defects.breakers) | set(defects.dangling))
        deleted += await graph.retract_relations(conn, scope.tenant_id, defects.agent_id, doomed)
    return Repairs(fixed=deleted, deleted=deleted)
