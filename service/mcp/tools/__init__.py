"""The 32 tools, one module per feature; each module exports ``TOOLS: list[ToolSpec]``.

A feature keeps its name in every layer: ``tools/recall.py`` calls
``service.memory.recall``, which reads through ``service.db.recall``. This package
only assembles the catalogue in the spec's registration order
(docs/tools.md, "The catalogue an agent sees").
"""

from __future__ import annotations

from typing import Any

from service.mcp.registry import ToolSpec
from service.mcp.tools import (
    agents,
    associations,
    calibration,
    contents,
    episodes,
    health,
    memories,
    operating_context,
    pauses,
    portability,
    profiles,
    queue,
    recall,
    reconstruct,
)
from service.models import ToolSet

TOOL_ORDER = (
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
)
EVERYDAY = frozenset(
    {
        "archive_episode",
        "declare_associations",
        "delete_episode",
        "delete_memory",
        "get_contents",
        "get_operating_context",
        "get_profile",
        "list_episodes",
        "list_memories",
        "lock_memory",
        "recall",
        "recall_with_context",
        "reconstruct",
        "store",
        "traverse",
        "unlock_memory",
        "update_memory",
        "update_profile",
    }
)
"""The ``everyday`` tool set: what an agent uses in a session (read the house rules,
remember, declare and walk its graph of entities, recall, expand previews, keep its
profile, archive the session, correct or forget one row). The pause controls,
calibration, the queue, export/import/merge, the health checks and
``delete_agent_data`` are the operator's (docs/tools.md)."""


def in_tool_set(tool_set: ToolSet, name: str) -> bool:
    """Whether a key of ``tool_set`` lists and may call tool ``name``."""
    return tool_set == "all" or name in EVERYDAY


FEATURES = (
    pauses,
    operating_context,
    memories,
    associations,
    recall,
    contents,
    reconstruct,
    profiles,
    episodes,
    agents,
    calibration,
    queue,
    portability,
    health,
)


def all_tools() -> list[ToolSpec[Any]]:
    """Every tool, in the spec's registration order; a tool outside the spec is a bug."""
    specs = {spec.name: spec for feature in FEATURES for spec in feature.TOOLS}
    unknown = set(specs) - set(TOOL_ORDER)
    missing = set(TOOL_ORDER) - set(specs)
    if unknown or missing:
        raise RuntimeError(
            f"catalogue mismatch: extra {sorted(unknown)}, missing {sorted(missing)}"
        )
    return [specs[name] for name in TOOL_ORDER]
