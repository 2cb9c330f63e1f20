"""Facts that change (docs/tools.md, "Facts that change"): supersession and validity time.

A supersession is the declared record-to-record relation ``supersedes`` (subject = the
newer record, object = the older), at most one successor per record (migration 0019).
Nothing about time is stored: a record's ``valid_from`` is its own time (a memory's
timestamp, else its created_at; an episode's start_time, else its created_at) and its
``valid_to`` is its successor's ``valid_from``. The model, in one sentence: *as of* an
instant T the memory holds the records whose ``valid_from`` <= T and whose successor, if
any, has ``valid_from`` > T (valid time as currently known; a retraction or a delete
corrects history rather than being remembered). The pure functions here are the model;
the rest reads and writes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from service.db import associations as graph, supersession as store
from service.db.pool import Connection
from service.db.supersession import Link, Ref, Times
from service.errors import InvalidInput
from service.memory.text import parse_timestamp
from service.models import TenantId

PREDICATE: Final = "supersedes"
MAX_REFS: Final = 64
"""Refs of a ``supersedes`` list per call; past it each is dropped (docs/reliability.md)."""
MAX_WALK: Final = 10_000
"""Successors walked to rule out a cycle; a longer chain is dropped, never walked further."""
AS_OF_CHARS: Final = 64
"""The longest ``as_of`` text read."""


def ref_text(ref: Ref) -> str:
    return f"{ref[0]}:{ref[1]}"


def valid_from(times: Times) -> datetime:
    """A record's own time: a memory's parsed timestamp, an episode's parsed start_time,
    else when it was written."""
    if times.ref[0] == "mem":
        return times.at or times.created_at
    parsed = parse_timestamp(times.start_time) if times.start_time else None
    return parsed or times.created_at


def parse_as_of(value: str) -> datetime:
    """``as_of`` as an aware instant: an ISO 8601 date (its first instant, 00:00) or date
    and time; without a zone it is UTC. InvalidInput when malformed. A future instant or
    one before the first record is valid (it simply holds what the model says then)."""
    text = value.strip()
    if not text or len(text) > AS_OF_CHARS:
        raise InvalidInput("as_of must be an ISO 8601 date or date and time")
    try:
        moment = datetime.fromisoformat(text)
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        # an instant past year 1 or 9999 once in UTC overflows: as malformed as a bad date
        raise InvalidInput(f"as_of {text!r} is not an ISO 8601 date or date and time") from None


@dataclasses.dataclass(frozen=True, slots=True)
class Fact:
    """What the model knows of one record: its validity and its neighbours in a chain."""

    valid_from: datetime
    valid_to: datetime | None = None
    superseded_by: Ref | None = None
    supersedes: tuple[Ref, ...] = ()

    @property
    def chained(self) -> bool:
        return self.superseded_by is not None or bool(self.supersedes)


def holds_at(fact: Fact, as_of: datetime) -> bool:
    """The model: valid from its own time until its successor's."""
    return fact.valid_from <= as_of and (fact.valid_to is None or fact.valid_to > as_of)


def kept(fact: Fact | None, as_of: datetime | None, current_only: bool) -> bool:
    """Whether a row stays in an answer read ``as_of`` (when given) or ``current_only``
    (no successor). Without a fact (not a record) it stays."""
    if fact is None:
        return True
    if as_of is not None:
        return holds_at(fact, as_of)
    return not current_only or fact.superseded_by is None


def successors_first(refs: Sequence[Ref], facts: Mapping[Ref, Fact]) -> list[Ref]:
    """``refs`` in their order, except that a record's successor, when also present, is
    moved just above it: a superseded record never ranks above the record that
    supersedes it. A cycle (the health check repairs it) cannot loop: each ref once."""
    present = set(refs)
    out: list[Ref] = []
    done: set[Ref] = set()
    for ref in refs:
        pending: list[Ref] = []
        step: Ref | None = ref
        while step is not None and step in present and step not in done and step not in pending:
            pending.append(step)
            fact = facts.get(step)
            step = fact.superseded_by if fact else None
        for item in reversed(pending):
            done.add(item)
            out.append(item)
    return out


def facts_of(links: Iterable[Link], times: Iterable[Times]) -> dict[Ref, Fact]:
    """Each record with known times, with its valid_to and neighbours from ``links``."""
    starts = {t.ref: valid_from(t) for t in times}
    successor: dict[Ref, Ref] = {}
    predecessors: dict[Ref, list[Ref]] = {}
    for link in links:
        successor[link.older] = link.newer
        predecessors.setdefault(link.newer, []).append(link.older)
    facts: dict[Ref, Fact] = {}
    for ref, start in starts.items():
        after = successor.get(ref)
        facts[ref] = Fact(
            valid_from=start,
            valid_to=None if after is None else starts.get(after, start),
            superseded_by=after,
            supersedes=tuple(sorted(predecessors.get(ref, ()))),
        )
    return facts


async def read_facts(
    conn: Connection, tenant_id: TenantId, agent: str, refs: Sequence[Ref], always: bool
) -> dict[Ref, Fact]:
    """The facts of ``refs`` (records of the agent named ``agent``): one lookup of their
    supersessions, and, when any exists or ``always``, one of the times of the records
    involved. Empty when no ref is in a chain and not ``always``: a recall without chains
    costs one query."""
    if not refs:
        return {}
    links = await store.links_of(conn, tenant_id, agent, refs)
    if not links and not always:
        return {}
    involved = set(refs) | {link.newer for link in links} | {link.older for link in links}
    times = await store.record_times(conn, tenant_id, agent, sorted(involved))
    return facts_of(links, times)


MAX_LINKS: Final = 100_000
"""Supersessions of one agent the health check reads at most (docs/reliability.md)."""


async def all_links(conn: Connection, tenant_id: TenantId, agent: str) -> list[Link]:
    """Every supersession of the agent named ``agent``, by id (at most MAX_LINKS)."""
    return await store.agent_links(conn, tenant_id, agent, MAX_LINKS)


async def check(conn: Connection, tenant_id: TenantId, newer: Ref, older: Ref) -> int | str | None:
    """Whether ``newer`` may supersede ``older`` (both records of the agent, under its graph
    lock): the id of the same supersession already declared, a reason to drop it, or None
    (declare it). A cycle is looked for by walking at most MAX_WALK successors of ``newer``."""
    if newer == older:
        return "a record cannot supersede itself"
    existing = await store.successor_of(conn, tenant_id, older)
    if existing is not None:
        if existing[1] == newer:
            return existing[0]
        return f"{ref_text(older)} is already superseded by {ref_text(existing[1])}"
    reaches, cut = await store.reaches_by_successors(conn, tenant_id, newer, older, MAX_WALK)
    if reaches:
        return (
            f"would make a cycle: {ref_text(newer)} is already superseded through {ref_text(older)}"
        )
    if cut:
        return f"the chain above {ref_text(newer)} is longer than {MAX_WALK} records"
    return None


async def neighbours(conn: Connection, tenant_id: TenantId, ref: Ref) -> list[store.Neighbour]:
    """Read before deleting ``ref``: its successor's relation and those in which it
    supersedes others (the delete cascades them away; :func:`relink` bridges them)."""
    return await store.supersession_neighbours(conn, tenant_id, ref)


@dataclasses.dataclass(frozen=True, slots=True)
class Relinked:
    """A supersession a delete made between the neighbours of the record it removed."""

    relation: int
    newer: Ref
    older: Ref


async def relink(
    conn: Connection,
    tenant_id: TenantId,
    ref: Ref,
    found: Sequence[store.Neighbour],
) -> list[Relinked]:
    """After ``ref`` is deleted (its relations cascaded away): its successor supersedes
    each record it superseded, in the scope of the successor's relation. A record that
    meanwhile got another successor keeps it (nothing written, nothing reported)."""
    above = next((n for n in found if n.link.older == ref), None)
    if above is None:
        return []
    made: list[Relinked] = []
    for below in (n for n in found if n.link.newer == ref):
        relation = await store.insert_supersession(
            conn, tenant_id, above, above.link.newer, below.link.older
        )
        if relation is not None:
            made.append(Relinked(relation, above.link.newer, below.link.older))
    return made


async def lock_graph(conn: Connection, tenant_id: TenantId, agent_id: int) -> None:
    await graph.lock_agent_graph(conn, tenant_id, agent_id)
