"""Structuring (docs/tools.md, "reconstruct", head, claims, roles, conflicts): one
cluster, plus what the walk added, becomes one item. Pure; ties are broken by written
total orders so the same rows always give the same item."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from service.db.reconstruct import Link
from service.db.supersession import Ref
from service.memory import supersession
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
from service.memory.supersession import Fact

CONTRADICTS: Final = "contradicts"
"""The declared predicate that makes two current claims a conflict."""


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


def current(row: Row, as_of: datetime | None = None) -> bool:
    """Whether ``row`` is current (docs/tools.md, "Facts that change"): it has no
    successor, or, read ``as_of``, its successor's time is after it."""
    fact = row.fact
    if fact is None or fact.superseded_by is None:
        return True
    return as_of is not None and (fact.valid_to is None or fact.valid_to > as_of)


def current_of(head: Row, members: Sequence[Row], as_of: datetime | None = None) -> Row:
    """``head``, or the member its chain of successors among ``members`` leads to: a
    superseded record never heads an item its successor is in. Each member once, so a
    cycle (the health check repairs it) cannot loop."""
    by_ref: dict[Ref, Row] = {(m.kind, m.id): m for m in members}
    seen = {head.ref}
    while not current(head, as_of) and head.fact is not None:
        after = by_ref.get(head.fact.superseded_by) if head.fact.superseded_by else None
        if after is None or after.ref in seen:
            break
        head = after
        seen.add(head.ref)
    return head


def chain_order(rows: Sequence[Row], as_of: datetime | None = None) -> list[Row]:
    """``rows`` (in claims order) with the current claims first, and every superseded
    claim after the claim that supersedes it (moved just above it when both are here)."""
    ordered = sorted(rows, key=lambda row: 0 if current(row, as_of) else 1)
    facts: dict[Ref, Fact] = {(r.kind, r.id): r.fact for r in ordered if r.fact is not None}
    by_ref: dict[Ref, Row] = {(r.kind, r.id): r for r in ordered}
    refs = supersession.successors_first([(r.kind, r.id) for r in ordered], facts)
    return [by_ref[ref] for ref in refs]


def structure(
    members: Sequence[Row],
    why: Mapping[str, str],
    max_evidence: int,
    walked: Sequence[tuple[Row, str, int]] = (),
    links: Sequence[Link] = (),
    held: bool = False,
    as_of: datetime | None = None,
) -> Item:
    """The item of one cluster: the head (the current statement of the best-ranked
    member), then the other members by relevance, then the walked rows in walk order, the
    first ``max_evidence`` retained (age decides nothing here); claims current first,
    each superseded claim after its successor, else newest first, with their roles;
    conflicts. ``as_of`` is the instant the answer reads (None = now)."""
    head = current_of(head_of(members), members, as_of)
    others = sorted((m for m in members if m is not head), key=relevance_key)
    kept = [head, *others, *(row for row, _, _ in walked)][:max_evidence]
    dropped = len(members) + len(walked) - len(kept)
    walk_why = {row.ref: (label, hops) for row, label, hops in walked}
    ordered = chain_order(sorted(kept, key=claims_key), as_of)
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
        conflicts=_conflicts(ordered) + _contradictions(ordered, links, as_of),
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


def _contradictions(
    rows: Sequence[Row], links: Sequence[Link], as_of: datetime | None
) -> tuple[Conflict, ...]:
    """Pairs of current claims a declared ``contradicts`` relation links (either
    direction, each pair once, sorted): two statements the agent said cannot both hold,
    both still standing."""
    standing = {row.ref for row in rows if current(row, as_of)}
    pairs = {
        tuple(sorted((link.subject, link.object)))
        for link in links
        if link.predicate == CONTRADICTS
        and link.subject != link.object
        and {link.subject, link.object} <= standing
    }
    return tuple(Conflict(pair, "", "declared_contradicts") for pair in sorted(pairs))
