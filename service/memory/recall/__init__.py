"""The recall pipeline (spec §3): retrieval, fusion, gate, ranking, recall_with_context."""
