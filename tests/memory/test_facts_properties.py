"""Property test of facts that change (docs/tools.md, "Facts that change").

Random sequences of store (with a ``supersedes`` list), supersede, retract, delete and
update-with-history run through the real library on a real database, one fresh tenant per
example. A plain model replays the documented rules (one successor per record, no self
reference, no cycle, a delete links its neighbours, a retraction restores the older
record); after each step ``recall`` and ``list_memories`` read ``as_of`` every instant
that matters (each record's valid_from, the instant before it, long before and long after)
must hold exactly the records the model holds then, and ``current_only`` exactly the
chain heads.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings, strategies as st

from service.errors import Refused
from service.memory import associations, supersession, tenants
from service.memory.library import Library
from service.memory.memories import edits, listing, store
from service.memory.recall import pipeline
from service.memory.recall.records import Recalled
from service.models import TenantId

Ref = tuple[str, int]
EPOCH = datetime(2020, 1, 1, tzinfo=UTC)
PROPERTY_SETTINGS = settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclasses.dataclass(frozen=True)
class Op:
    """``kind`` with two indexes into the records (or relations) that exist at the time,
    taken modulo their count, and a day offset for a store's timestamp."""

    kind: str
    i: int
    j: int
    day: int


OPS = st.builds(
    Op,
    st.sampled_from(["store", "store", "supersede", "retract", "delete", "update"]),
    st.integers(0, 7),
    st.integers(0, 7),
    st.integers(0, 30),
)


@dataclasses.dataclass
class Model:
    """The documented model: each record's valid_from, each supersession (older -> newer
    and its relation id)."""

    starts: dict[Ref, datetime] = dataclasses.field(default_factory=dict)
    successor: dict[Ref, tuple[Ref, int]] = dataclasses.field(default_factory=dict)

    def allowed(self, newer: Ref, older: Ref) -> bool:
        """No self reference, no second successor, no cycle (``older`` above ``newer``)."""
        if newer == older or older in self.successor:
            return False
        step: Ref | None = newer
        while step is not None:
            if step == older:
                return False
            step = self.successor[step][0] if step in self.successor else None
        return True

    def delete(self, gone: Ref) -> None:
        above = self.successor.pop(gone, None)
        below = [old for old, (new, _) in self.successor.items() if new == gone]
        for old in below:
            del self.successor[old]
        del self.starts[gone]
        if above is not None:
            for old in below:
                self.successor[old] = (above[0], 0)  # the id is the service's

    def holds(self, at: datetime) -> set[Ref]:
        return {
            ref
            for ref, start in self.starts.items()
            if start <= at
            and (ref not in self.successor or self.starts[self.successor[ref][0]] > at)
        }

    def heads(self) -> set[Ref]:
        return set(self.starts) - set(self.successor)


async def _recalled(lib: Library, tenant: TenantId, **reading: object) -> set[Ref]:
    request = pipeline.RecallRequest(agent_id="a", query="", limit=100, **reading)  # type: ignore[arg-type]
    result = await pipeline.recall(lib, tenant, request)
    return {(row.kind, row.id) for row in result.rows if isinstance(row, Recalled)}


async def _check(lib: Library, tenant: TenantId, model: Model) -> None:
    instants = {EPOCH - timedelta(days=400), EPOCH + timedelta(days=4000)}
    for start in model.starts.values():
        instants |= {start, start - timedelta(microseconds=1)}
    for at in sorted(instants):
        got = await _recalled(lib, tenant, as_of=at.isoformat())
        assert got == model.holds(at), (at, model)
        assert await _listed(lib, tenant, as_of=at.isoformat()) == model.holds(at), (at, model)
    assert await _recalled(lib, tenant, current_only=True) == model.heads(), model
    assert await _listed(lib, tenant, current_only=True) == model.heads(), model


async def _listed(
    lib: Library, tenant: TenantId, as_of: str = "", current_only: bool = False
) -> set[Ref]:
    rows = await listing.list_memories(
        lib,
        tenant,
        agent_id="a",
        project_id=None,
        limit=500,
        as_of=as_of,
        current_only=current_only,
    )
    return {("mem", row.id) for row in rows.rows}


async def _declare(lib: Library, tenant: TenantId, newer: Ref, older: Ref) -> list[int]:
    relation = {"subject": supersession.ref_text(newer), "predicate": "supersedes"}
    relation["object"] = supersession.ref_text(older)
    decl = associations.Declaration(agent_id="a", associations={"relations": [relation]})
    return (await associations.declare(lib, tenant, decl)).relations


async def _step(lib: Library, tenant: TenantId, model: Model, op: Op, n: int) -> None:
    refs = sorted(model.starts)
    if op.kind == "store" or not refs:
        stamp = EPOCH + timedelta(days=op.day, seconds=n)
        older = refs[op.i % len(refs)] if refs and op.j % 2 else None
        message = {"content": f"fact {n}", "timestamp": stamp.isoformat()}
        supersedes = None if older is None else [supersession.ref_text(older)]
        request = store.StoreRequest("a", message, supersedes=supersedes)
        outcome = await store.store(lib, tenant, request)
        assert isinstance(outcome, store.Stored)
        new: Ref = ("mem", outcome.memory_id)
        model.starts[new] = stamp
        if older is not None:
            assert outcome.supersedes is not None
            if model.allowed(new, older):
                model.successor[older] = (new, outcome.supersedes.relations[0])
            else:
                assert outcome.supersedes.relations == []
        return
    newer, older = refs[op.i % len(refs)], refs[op.j % len(refs)]
    if op.kind == "supersede":
        declared = await _declare(lib, tenant, newer, older)
        if model.allowed(newer, older):
            model.successor[older] = (newer, declared[0])
        elif older in model.successor and model.successor[older][0] == newer:
            assert declared == [model.successor[older][1]] or model.successor[older][1] == 0
        else:
            assert declared == []
    elif op.kind == "retract" and model.successor:
        links = await _links(lib, tenant)
        gone = links[op.i % len(links)]
        decl = associations.Declaration(agent_id="a", retract={"relations": [gone[2]]})
        await associations.declare(lib, tenant, decl)
        del model.successor[gone[1]]
    elif op.kind == "delete":
        await edits.delete_memory(lib, tenant, newer[1], "a")
        model.delete(newer)
    elif op.kind == "update":
        await _update(lib, tenant, model, newer, n)


async def _update(lib: Library, tenant: TenantId, model: Model, ref: Ref, n: int) -> None:
    try:
        done = await edits.update_memory(
            lib, tenant, ref[1], f"fact {n} again", "a", keep_history=True
        )
    except Refused:
        assert ref in model.successor
        return
    assert ref not in model.successor
    assert done.new_id is not None
    assert done.relation is not None
    new: Ref = ("mem", done.new_id)
    async with lib.db.tenant_tx(tenant) as conn:
        facts = await supersession.read_facts(conn, tenant, "a", [new], always=True)
    model.starts[new] = facts[new].valid_from
    model.successor[ref] = (new, done.relation)


async def _links(lib: Library, tenant: TenantId) -> list[tuple[Ref, Ref, int]]:
    """(newer, older, relation id) of every supersession the service holds."""
    async with lib.db.tenant_tx(tenant) as conn:
        facts_refs = await supersession.all_links(conn, tenant, "a")
    return [(link.newer, link.older, link.id) for link in facts_refs]


@PROPERTY_SETTINGS
@given(ops=st.lists(OPS, min_size=1, max_size=9))
async def test_as_of_and_current_only_replay_the_documented_model(
    lib: Library, ops: list[Op]
) -> None:
    tenant = TenantId((await tenants.create_tenant(lib.db, f"f-{uuid.uuid4().hex[:12]}")).id)
    model = Model()
    for n, op in enumerate(ops):
        await _step(lib, tenant, model, op, n)
        links = await _links(lib, tenant)
        assert {older: newer for newer, older, _ in links} == {
            older: newer for older, (newer, _) in model.successor.items()
        }
        await _check(lib, tenant, model)
