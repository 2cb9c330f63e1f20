"""The wire shapes of the tools: the only code that spells wire keys and wire order.

The library answers typed records; each module here turns one family's records into the
exact JSON objects its tools answer (Python dict order is the JSON order, which the MCP
end-to-end suites pin byte for byte).
"""
