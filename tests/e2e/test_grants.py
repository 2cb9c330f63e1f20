"""A key without the grant runs every tool against an agent of its own tenant.

The key holds ``{AGENT: none, *: read-write}``, the grant set of the export-area
bypass that issue 10 reported. Every tool that touches the denied agent (or sweeps
the tenant, which needs the lowest grant) answers ``permission_denied``; the three
tools any caller may use answer without revealing the agent's content; and the
agent's data is unchanged afterwards. Every registered tool must appear in the
cross-tenant PROBES this test reuses, so a new tool cannot ship without this check
either. The HTTP routes (``/v1/export``, ``/v1/import``, ``/v1/files``) are tried
with the same grants in ``test_export_area.py``.
"""

from __future__ import annotations

import json
from typing import Any

from service.memory import tenants
from service.memory.library import Library
from service.models import Permission
from tests.e2e.test_cross_tenant import A_FILE, AGENT, SECRET, probes, seed, snapshot
from tests.support import Agent, Served, new_tenant

ANY_CALLER = {"get_operating_context", "persistence_status", "get_queue_status"}


def _denied(answer: dict[str, Any]) -> bool:
    return answer.get("error") == "permission_denied"


async def test_a_key_without_the_grant_is_refused_by_every_tool_touching_the_agent(
    lib: Library, served: Served
) -> None:
    owner = Agent(served, await new_tenant(lib, "granted"))
    ids = await seed(owner)
    await owner.call("export_memories", agent_id=AGENT, output_path=A_FILE)
    before = await snapshot(owner)
    grants: dict[str, Permission] = {AGENT: "none", "*": "read-write"}
    restricted = Agent(
        served, await tenants.create_key(lib.db, "granted", label="restricted", grants=grants)
    )
    table = probes(ids)
    assert set(await restricted.tool_names()) == {tool for tool, _ in table}
    refused: set[str] = set()
    for tool, args in table:
        answer = await restricted.call(tool, **args)
        assert SECRET not in json.dumps(answer), (tool, args, answer)
        if _denied(answer):
            refused.add(tool)
        else:
            assert tool in ANY_CALLER, (tool, args, answer)
    assert refused == {tool for tool, _ in table} - ANY_CALLER
    assert await snapshot(owner) == before


async def test_id_keyed_edits_answer_for_a_denied_agents_row_as_for_a_missing_one(
    lib: Library, served: Served
) -> None:
    """Issue 36, finding 11: naming an agent it holds (``mine``), a key without the grant
    on ``AGENT`` learns neither that ``AGENT``'s row exists nor whether it is locked:
    every id-keyed edit answers as for an id no row has."""
    owner = Agent(served, await new_tenant(lib, "walled"))
    ids = await seed(owner)
    before = await snapshot(owner)
    grants: dict[str, Permission] = {AGENT: "none", "*": "read-write"}
    restricted = Agent(
        served, await tenants.create_key(lib.db, "walled", label="walled", grants=grants)
    )
    missing = ids["mem"] + 1000
    calls = [
        ("update_memory", {"content": "overwritten"}),
        ("lock_memory", {}),
        ("unlock_memory", {}),
        ("delete_memory", {}),
    ]
    for tool, extra in calls:
        answers = {}
        for name in ("mem", "locked", "missing"):
            memory_id = missing if name == "missing" else ids[name]
            answer = await restricted.call(tool, memory_id=memory_id, agent_id="mine", **extra)
            answers[name] = json.dumps(answer).replace(str(memory_id), "N")
        assert answers["mem"] == answers["locked"] == answers["missing"], (tool, answers)
        assert json.loads(answers["missing"]) == {"ok": False, "error": "Memory N not found"}
    assert await snapshot(owner) == before
