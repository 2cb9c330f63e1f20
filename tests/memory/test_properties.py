"""Property tests: dedup scopes and list isolation against a plain model of the spec.

The model is written straight from the documented rules (docs/tools.md, "Dedup scopes";
docs/tools.md, "Isolation axes") and knows nothing of SQL; hypothesis drives random operation
sequences through the real library on a real database, one fresh tenant per example.
"""

from __future__ import annotations

import dataclasses
import uuid

from hypothesis import HealthCheck, given, settings, strategies as st

from service.memory import tenants
from service.memory.library import Library
from service.memory.memories import listing, store
from service.models import TenantId

AGENTS = st.sampled_from(["a", "b"])
PROJECTS = st.sampled_from(["", "X", "Y"])
CHANNELS = st.sampled_from(["", "c1", "c2"])
MSG_IDS = st.sampled_from(["", "m1", "m2"])
CONTENTS = st.sampled_from(["alpha", "beta"])
PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@dataclasses.dataclass(frozen=True)
class Op:
    agent: str
    project: str
    channel: str
    msg_id: str
    content: str


OPS = st.builds(Op, AGENTS, PROJECTS, CHANNELS, MSG_IDS, CONTENTS)


def scope(value: str) -> set[str]:
    """docs/tools.md, "Dedup scopes": {X, ''} for a bucket X, {''} for the global pool."""
    return {value, ""} if value else {""}


def model_store(rows: list[Op], op: Op) -> str:
    """The spec's store outcome for ``op`` given the rows stored before it."""
    projects, channels = scope(op.project), scope(op.channel)
    if op.msg_id and any(
        r.agent == op.agent and r.project in projects and r.msg_id == op.msg_id for r in rows
    ):
        return "duplicate msg_id"
    if any(
        r.agent == op.agent
        and r.project in projects
        and r.channel in channels
        and r.content == op.content
        for r in rows
    ):
        return "duplicate content"
    rows.append(op)
    return "stored"


def model_list(rows: list[Op], agent: str | None, project: str | None) -> list[Op]:
    """docs/tools.md, "Isolation axes", the rule for lists: empty/omitted agent = all; project
    None/''/X."""

    def visible(row: Op) -> bool:
        if agent and row.agent != agent:
            return False
        if project is None:
            return True
        return row.project in ({project, ""} if project else {""})

    return [row for row in rows if visible(row)]


async def _fresh_tenant(lib: Library) -> TenantId:
    row = await tenants.create_tenant(lib.db, f"p-{uuid.uuid4().hex[:12]}")
    return TenantId(row.id)


async def _store(lib: Library, tenant: TenantId, op: Op) -> store.StoreOutcome:
    message = {"content": op.content, "id": op.msg_id}
    request = store.StoreRequest(op.agent, message, op.channel, op.project)
    return await store.store(lib, tenant, request)


@PROPERTY_SETTINGS
@given(ops=st.lists(OPS, max_size=12))
async def test_store_dedup_matches_the_spec_model(lib: Library, ops: list[Op]) -> None:
    tenant = await _fresh_tenant(lib)
    model: list[Op] = []
    for op in ops:
        expected = model_store(model, op)
        body = await _store(lib, tenant, op)
        actual = "stored" if isinstance(body, store.Stored) else body.reason
        assert actual == expected, (op, body)


@PROPERTY_SETTINGS
@given(
    ops=st.lists(OPS, max_size=12),
    agent=st.sampled_from([None, "", "a", "b", "zz"]),
    project=st.sampled_from([None, "", "X", "Y", "Z"]),
)
async def test_list_isolation_matches_the_spec_model(
    lib: Library, ops: list[Op], agent: str | None, project: str | None
) -> None:
    tenant = await _fresh_tenant(lib)
    model: list[Op] = []
    for op in ops:
        model_store(model, op)
        await _store(lib, tenant, op)
    listed = await listing.list_memories(lib, tenant, agent_id=agent, project_id=project, limit=500)
    rows = listed.rows
    expected = model_list(model, agent, project)
    actual = [(r.agent_id, r.project_id, r.channel, r.content) for r in rows]
    want = [(r.agent, r.project, r.channel, r.content) for r in reversed(expected)]
    assert actual == want
