"""tools/list over MCP: the 32 tools of the spec, in order, with their axes and hints,
in a catalogue lean enough for every session's context and portable schemas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2

from tests.support import Agent, mcp_session

CATALOGUE_BUDGET_CHARS = 21_335
"""The whole tools/list answer, as served, in characters (about 5,200 tokens; 14,000
until every string and list got its bound, issue 36: 13,912 -> 14,913; 15,000 until
declare_associations, traverse and store's associations rider, issue 32: 14,915 ->
16,692, +1,777; 17,000 until CPersona 2.6's exact annotations, ``_meta`` alwaysLoad and
store's top-level form and ``lock``, issue 32 part 6: 16,692 -> 17,625, +933; 17,645
until reconstruct, issue 32 part 4: 17,625 -> 18,743, +1,118; 18,750 until facts that
change, issue 33: store's and archive_episode's ``supersedes``, update_memory's
``keep_history``, recall's and list_memories' ``as_of`` and ``current_only``, traverse's
``as_of``: 18,743 -> 19,557, +814; 19,600 until ``time_cue`` on recall and reconstruct,
issue 32 part 5: 19,557 -> 20,701, +1,144; 20,750 until reconstruct's ``as_of`` and
``current_only`` and its claims order in the description, issue 33: 20,701 -> 20,903,
+202; 20,950 until get_contents'
range objects, issue 34 part 3: 20,903 -> 21,288, +385)."""
DESCRIPTION_BUDGET_CHARS = 400

SPEC_ORDER = [
    "pause_persistence",
    "resume_persistence",
    "persistence_status",
    "get_operating_context",
    "store",
    "declare_associations",
    "traverse",
    "recall",
    "recall_with_context",
    "get_contents",
    "reconstruct",
    "get_profile",
    "update_profile",
    "archive_episode",
    "list_memories",
    "list_episodes",
    "delete_agent_data",
    "calibrate_threshold",
    "set_recall_precision",
    "get_recall_precision",
    "delete_memory",
    "delete_episode",
    "update_memory",
    "lock_memory",
    "unlock_memory",
    "get_queue_status",
    "export_memories",
    "import_memories",
    "merge_memories",
    "check_health",
    "deep_check",
    "migrate_channel_axis",
]
READ_ONLY = {
    "persistence_status",
    "get_operating_context",
    "traverse",
    "recall",
    "recall_with_context",
    "get_contents",
    "reconstruct",
    "get_profile",
    "list_memories",
    "list_episodes",
    "get_recall_precision",
    "get_queue_status",
}
DESTRUCTIVE = {
    "declare_associations",
    "delete_agent_data",
    "delete_memory",
    "delete_episode",
    "export_memories",
    "import_memories",
    "merge_memories",
}


async def test_tools_list_is_the_spec_catalogue(client: Agent) -> None:
    async with mcp_session(client.served, client.key) as session:
        tools = (await session.list_tools()).tools
    assert [tool.name for tool in tools] == SPEC_ORDER

    def declaring(parameter: str) -> int:
        return sum(parameter in tool.input_schema.get("properties", {}) for tool in tools)

    assert (declaring("agent_id"), declaring("project_id"), declaring("channel")) == (25, 9, 7)
    for tool in tools:
        assert tool.description, tool.name
        assert tool.annotations is not None
        assert bool(tool.annotations.read_only_hint) == (tool.name in READ_ONLY), tool.name
        assert bool(tool.annotations.destructive_hint) == (tool.name in DESTRUCTIVE), tool.name
    not_idempotent = {
        t.name for t in tools if t.annotations and t.annotations.idempotent_hint is False
    }
    assert {"archive_episode", "calibrate_threshold"} <= not_idempotent
    limits = next(t for t in tools if t.name == "recall").input_schema["properties"]["limit"]
    assert (limits["minimum"], limits["maximum"]) == (0, 100)
    refs = next(t for t in tools if t.name == "get_contents").input_schema["properties"]["refs"]
    assert refs["maxItems"] == 20


async def _raw_tools_list(client: Agent) -> str:
    """The body of a tools/list answer exactly as the server sends it."""
    headers = {
        "authorization": f"Bearer {client.key}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        reply = await http.post(client.served.mcp_url, json=request, headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.text


def _schema_nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every object inside a JSON Schema (properties, items, nested objects)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _schema_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_nodes(value)


async def test_the_whole_tools_list_answer_fits_the_catalogue_budget(client: Agent) -> None:
    raw = await _raw_tools_list(client)
    tools = json.loads(raw)["result"]["tools"]
    assert [tool["name"] for tool in tools] == SPEC_ORDER
    assert len(raw) <= CATALOGUE_BUDGET_CHARS, f"{len(raw)} characters"
    for tool in tools:
        assert len(tool["description"]) <= DESCRIPTION_BUDGET_CHARS, tool["name"]


async def test_no_schema_declares_a_type_union(client: Agent) -> None:
    tools = json.loads(await _raw_tools_list(client))["result"]["tools"]
    for tool in tools:
        for node in _schema_nodes(tool["inputSchema"]):
            declared = node.get("type")
            if declared is not None and not isinstance(declared, dict):
                assert isinstance(declared, str), (tool["name"], node)
    resolved = next(t for t in tools if t["name"] == "archive_episode")["inputSchema"]
    assert resolved["properties"]["resolved"] == {"type": "boolean", "default": False}


ANNOTATIONS: dict[str, dict[str, bool]] = {
    **{
        name: {"readOnlyHint": True}
        for name in (
            "persistence_status",
            "get_operating_context",
            "traverse",
            "recall",
            "recall_with_context",
            "get_contents",
            "reconstruct",
            "get_profile",
            "list_memories",
            "list_episodes",
            "get_recall_precision",
            "get_queue_status",
        )
    },
    **{
        name: {"readOnlyHint": False}
        for name in ("check_health", "deep_check", "migrate_channel_axis")
    },
    **{
        name: {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}
        for name in (
            "pause_persistence",
            "resume_persistence",
            "store",
            "update_memory",
            "lock_memory",
            "unlock_memory",
        )
    },
    "update_profile": {"readOnlyHint": False, "destructiveHint": False},
    **{
        name: {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
        for name in ("archive_episode", "calibrate_threshold", "set_recall_precision")
    },
    **{
        name: {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}
        for name in (
            "declare_associations",
            "delete_agent_data",
            "delete_memory",
            "delete_episode",
            "import_memories",
            "merge_memories",
        )
    },
    "export_memories": {"readOnlyHint": False, "destructiveHint": True},
}
"""CPersona 2.6's hints, exactly (docs/tools.md, "The catalogue an agent sees"): each tool
sends these keys and no others."""
ALWAYS_LOAD = {"store", "archive_episode", "reconstruct"}
"""The tools whose definitions a client should load at session start (``_meta``)."""


async def test_every_tool_sends_exactly_cpersonas_annotations(client: Agent) -> None:
    tools = json.loads(await _raw_tools_list(client))["result"]["tools"]
    for tool in tools:
        assert tool["annotations"] == ANNOTATIONS[tool["name"]], tool["name"]


async def test_exactly_the_declared_tools_carry_always_load(client: Agent) -> None:
    tools = json.loads(await _raw_tools_list(client))["result"]["tools"]
    carrying = {tool["name"] for tool in tools if "_meta" in tool}
    assert carrying == ALWAYS_LOAD & {tool["name"] for tool in tools}
    for tool in tools:
        if tool["name"] in carrying:
            assert tool["_meta"] == {"anthropic/alwaysLoad": True}
    async with mcp_session(client.served, client.key) as session:
        listed = (await session.list_tools()).tools
    assert {tool.name for tool in listed if tool.meta} == carrying
