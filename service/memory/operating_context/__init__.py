"""The per-tenant operating context (docs/tools.md, "get_operating_context"): parsing, the project
gate, storage."""
