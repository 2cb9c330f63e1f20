"""reconstruct: recall items assembled from one candidate recall (docs/tools.md,
"reconstruct"). The library selects, bundles, walks and orders rows and returns typed
records with full texts; quoting, budgets, modes' token caps and wire shapes belong to
the MCP boundary (``service.mcp.render.reconstruct``)."""
