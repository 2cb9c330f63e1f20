"""The relation walk (docs/tools.md, "reconstruct", the relation walk): per item, in
item order, from the entities its records mention over declared entity-to-entity
relations (either direction, up to ``max_hops``) to the records that mention an entity
reached through at least one relation. Pure over the graph ``reconstruct_walk`` loaded
(one statement for all items). A walked record is evidence, never an item or a head; it
is never a candidate and never repeated in a later item."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from service.db.walks import WalkGraph
from service.memory.reconstruct.bundle import WHY_RELATION


@dataclasses.dataclass(frozen=True, slots=True)
class Walked:
    """A walked record: its ref, ``relation:<predicate>`` of the reaching edge, hops."""

    ref: str
    why: str
    hops: int


@dataclasses.dataclass(frozen=True, slots=True)
class ItemWalk:
    """What the walk added to one item (in the written order: hops, recency of the
    reaching relation, record id) and the bounds that cut it."""

    walked: tuple[Walked, ...]
    hops_cut: bool
    evidence_cut: bool


Adjacency = dict[int, list[tuple[int, int, str]]]
"""entity -> (recency, other entity, predicate), most recently declared first."""


def adjacency(graph: WalkGraph) -> Adjacency:
    """Both directions of every loaded relation; recency 0 = most recently declared."""
    out: Adjacency = {}
    for recency, (_, subject, obj, predicate) in enumerate(graph.edges):
        if subject == obj:
            continue
        out.setdefault(subject, []).append((recency, obj, predicate))
        out.setdefault(obj, []).append((recency, subject, predicate))
    return out


def walk(
    items: Sequence[Sequence[str]],
    pool: frozenset[str],
    graph: WalkGraph,
    max_hops: int,
    per_entity: int,
) -> list[ItemWalk]:
    """Per item (its member refs, in item order), the walked records and cut flags.
    ``per_entity`` is the records kept per entity (``max_evidence``); the graph read one
    more, which is how an evidence cut is known."""
    links = adjacency(graph)
    taken: set[str] = set()
    out: list[ItemWalk] = []
    for members in items:
        one = _walk_one(members, pool | taken, graph, links, max_hops, per_entity)
        taken.update(w.ref for w in one.walked)
        out.append(one)
    return out


def _walk_one(
    members: Sequence[str],
    excluded: frozenset[str] | set[str],
    graph: WalkGraph,
    links: Adjacency,
    max_hops: int,
    per_entity: int,
) -> ItemWalk:
    distance, via, frontier = _distances(members, graph, links, max_hops)
    hops_cut = any(
        other not in distance for entity in frontier for _, other, _ in links.get(entity, ())
    ) or any(entity not in graph.reached for entity in distance)
    evidence_cut = any(
        len(graph.records.get(entity, ())) > per_entity for entity, hops in distance.items() if hops
    )
    best: dict[str, tuple[int, int, int, str, str]] = {}
    for entity, hops in distance.items():
        if hops == 0:
            continue
        recency, predicate = via[entity]
        for ref in graph.records.get(entity, [])[:per_entity]:
            kind, _, raw = ref.partition(":")
            key = (hops, recency, int(raw), kind, predicate)
            if ref not in excluded and (ref not in best or key < best[ref]):
                best[ref] = key
    ordered = sorted(best.items(), key=lambda kv: kv[1])
    walked = tuple(Walked(ref, WHY_RELATION + key[4], key[0]) for ref, key in ordered)
    return ItemWalk(walked, hops_cut, evidence_cut)


def _distances(
    members: Sequence[str], graph: WalkGraph, links: Adjacency, max_hops: int
) -> tuple[dict[int, int], dict[int, tuple[int, str]], list[int]]:
    """Breadth first from the members' entities: hops per entity, the (recency,
    predicate) of the edge that reached each (the most recent at its hop), and the last
    frontier (whose relations past the bound were left unfollowed)."""
    distance: dict[int, int] = {e: 0 for ref in members for e in graph.mentions.get(ref, ())}
    via: dict[int, tuple[int, str]] = {}
    frontier = sorted(distance)
    for hop in range(1, max_hops + 1):
        step: dict[int, tuple[int, str]] = {}
        for entity in frontier:
            for recency, other, predicate in links.get(entity, ()):
                if other not in distance and (other not in step or recency < step[other][0]):
                    step[other] = (recency, predicate)
        for other, edge in step.items():
            distance[other], via[other] = hop, edge
        frontier = sorted(step)
    return distance, via, frontier
