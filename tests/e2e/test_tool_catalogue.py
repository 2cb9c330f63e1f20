"""tools/list over MCP: the 29 tools of the spec, in order, with their axes and hints."""

from __future__ import annotations

from tests.support import Agent, mcp_session

SPEC_ORDER = [
    "pause_persistence",
    "resume_persistence",
    "persistence_status",
    "get_operating_context",
    "store",
    "recall",
    "recall_with_context",
    "get_contents",
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
    "recall",
    "recall_with_context",
    "get_contents",
    "get_profile",
    "list_memories",
    "list_episodes",
    "get_recall_precision",
    "get_queue_status",
}
DESTRUCTIVE = {
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

    assert (declaring("agent_id"), declaring("project_id"), declaring("channel")) == (22, 6, 4)
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
