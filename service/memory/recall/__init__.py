"""The recall pipeline (docs/tools.md, "How recall works"): retrieval, fusion, gate, ranking,
recall_with_context."""
