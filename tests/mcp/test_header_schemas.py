"""The schemas the SDK reads to check a modern ``tools/call``'s ``Mcp-Param-*`` headers
(issue 37, the fixed cost of a call).

On every call with arguments the SDK walks the called tool's whole input schema twice,
looking for ``x-mcp-header`` annotations, unless the server's ``get_tool_input_schema``
answers None ("nothing to validate"). No tool of ours declares one, so the lookup answers
None for each and the walk, which could never reject anything, is not run; a tool that
declared one would get its schema checked as before.
"""

from __future__ import annotations

import dataclasses

from mcp.shared.inbound import X_MCP_HEADER_KEY

from service.mcp import server, tools


def test_no_schema_is_walked_for_headers_no_tool_declares() -> None:
    lookup = server.header_schemas(tools.all_tools())
    assert all(lookup(spec.name) is None for spec in tools.all_tools())
    assert lookup("no_such_tool") is None


def test_a_tool_that_declares_a_header_has_its_schema_checked() -> None:
    recall = next(spec for spec in tools.all_tools() if spec.name == "recall")
    properties = dict(recall.input_schema["properties"])
    properties["agent_id"] = {**properties["agent_id"], X_MCP_HEADER_KEY: "Agent"}
    declaring = dataclasses.replace(
        recall, input_schema={**recall.input_schema, "properties": properties}
    )
    lookup = server.header_schemas([declaring])
    assert lookup("recall") == declaring.input_schema
