"""Structuring (docs/tools.md, "reconstruct", head, claims, roles, conflicts): one
cluster, plus what the walk added, becomes one item. Pure; ties are broken by written
total orders so the same rows always give the same item."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.db.reconstruct import Link
from service.memory.reconstruct.bundle import WHY_RELATION, contains, message_key
from service.memory.reconstruct.records import (
    CLUSTER_KEYS,
    ROLE_WORDS,
    Claim,
    Conflict,
    Item,
    Role,
    Row,
)


def claims_key(row: Row) -> tuple[int, float, int, int, int]:
    """Claims order: parseable timestamps first, newest first, memories before episodes,
    relevance rank, row id (a total order)."""
    return (
        1 if row.at is None else 0,
        -row.at.timestamp() if row.at is not None else 0.0,
        0 if row.kind == "mem" else 1,
        row.rank,
        row.id,
    )


def relevance_key(row: Row) -> tuple[int, str, int]:
    return (row.rank, row.kind, row.id)


def head_of(members: Sequence[Row]) -> Row:
    """The best-ranked member, or the newest row sharing its (project, msg_id): the
    latest version of a record is its current statement."""
    lead = min(members, key=relevance_key)
    identity = message_key(lead)
    if identity is None or lead.at is None:
        return lead
    versions = [m for m in members if message_key(m) == identity and m.at is not None]
    return min(versions, key=claims_key)


def structure(
    members: Sequence[Row],
    why: Mapping[str, str],
    max_evidence: int,
    walked: Sequence[tuple[Row, str, int]] = (),
    links: Sequence[Link] = (),
    held: bool = False,
) -> Item:
    """The item of one cluster: the head, then the other members by relevance, then
    the walked rows in walk order, the first ``max_evidence`` retained (age decides
    nothing here); claims newest first with their roles; conflicts."""
    head = head_of(members)
    others = sorted((m for m in members if m is not head), key=relevance_key)
    kept = [head, *others, *(row for row, _, _ in walked)][:max_evidence]
    dropped = len(members) + len(walked) - len(kept)
    walk_why = {row.ref: (label, hops) for row, label, hops in walked}
    ordered = sorted(kept, key=claims_key)
    by_ref: dict[str, Claim] = {}
    for row in ordered:
        label, hops = walk_why.get(row.ref, (why.get(row.ref, "seed"), None))
        by_ref[row.ref] = Claim(row, label, hops, _roles(row, ordered, links))
    present = {_key_of(why.get(m.ref)) for m in members}
    independence = next((k for k in CLUSTER_KEYS if k in present), "singleton")
    return Item(
        head=by_ref[head.ref],
        claims=tuple(by_ref[row.ref] for row in ordered),
        relevance=tuple(by_ref[row.ref] for row in kept),
        independence_reason=independence,
        conflicts=_conflicts(ordered),
        claims_omitted=dropped,
        held=held,
    )


def _key_of(why: str | None) -> str | None:
    if why is not None and why.startswith(WHY_RELATION):
        return "cluster:relation"
    return why


def _roles(claim: Row, retained: Sequence[Row], links: Sequence[Link]) -> tuple[Role, ...]:
    """Derived roles (the next newer version ``supersedes``; a containing episode
    ``supports``), then declared record-to-record role relations whose object is this
    claim and whose subject is retained, without repeats."""
    roles: list[Role] = []
    identity = message_key(claim)
    if identity is not None and claim.at is not None:
        at = claim.at
        newer = [
            m
            for m in retained
            if m.ref != claim.ref and message_key(m) == identity and m.at is not None and m.at > at
        ]
        if newer:
            successor = min(newer, key=lambda m: (m.at.timestamp() if m.at else 0.0, m.id))
            roles.append(Role(successor.ref, "supersedes"))
    roles.extend(Role(m.ref, "supports") for m in retained if contains(m, claim))
    refs = {m.ref for m in retained}
    for link in links:
        role = Role(link.subject, link.predicate)
        if (
            link.object == claim.ref
            and link.subject in refs
            and link.predicate in ROLE_WORDS
            and role not in roles
        ):
            roles.append(role)
    return tuple(roles)


def _conflicts(rows: Sequence[Row]) -> tuple[Conflict, ...]:
    """Rows sharing (project, msg_id) and an identical timestamp: the one conflict the
    stored fields prove."""
    groups: dict[tuple[tuple[str, str], float], list[str]] = {}
    for row in rows:
        identity = message_key(row)
        if identity is not None and row.at is not None:
            groups.setdefault((identity, row.at.timestamp()), []).append(row.ref)
    return tuple(
        Conflict(tuple(sorted(refs)), msg_id)
        for ((_, msg_id), _), refs in sorted(groups.items())
        if len(refs) > 1
    )
