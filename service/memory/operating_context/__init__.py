"""The per-tenant operating context (spec §9.4): parsing, the project gate, storage."""
