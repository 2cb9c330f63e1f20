"""The portability answers: export_memories, import_memories, merge_memories
(docs/portability.md, "The format"; docs/portability.md, "Import rules"). The HTTP import
endpoint and the ``import`` command answer with :func:`imported` too."""

from __future__ import annotations

from service.memory.portability.outcomes import Exported, GraphRecords, Imported, Merged
from service.models import JsonObject


def exported(done: Exported) -> JsonObject:
    """``{ok, path, memories, episodes, profiles, download_url, expires_at}``."""
    return {
        "ok": True,
        "path": done.path,
        "memories": done.counts.memories,
        "episodes": done.counts.episodes,
        "profiles": done.counts.profiles,
        "download_url": done.download_url,
        "expires_at": done.expires_at,
    }


def imported(done: Imported) -> JsonObject:
    """The import's counts; ``imported_graph_records``, ``skipped_graph_records`` and
    ``errors`` only when there are any."""
    body: JsonObject = {
        "ok": True,
        "dry_run": done.dry_run,
        "imported_memories": done.imported_memories,
        "skipped_memories": done.skipped_memories,
        "imported_episodes": done.imported_episodes,
        "skipped_episodes": done.skipped_episodes,
        "profile_updated": done.profile_updated,
    }
    if done.imported_graph is not None:
        body["imported_graph_records"] = _graph(done.imported_graph)
    if done.graph is not None:
        body["skipped_graph_records"] = _graph(done.graph)
    if done.errors:
        body["errors"] = list(done.errors)
    return body


def merged(done: Merged) -> JsonObject:
    """The merge's counts; a move adds ``source_deleted`` and ``left_at_source``."""
    body: JsonObject = {
        "ok": True,
        "dry_run": done.dry_run,
        "source_agent_id": done.source_agent_id,
        "target_agent_id": done.target_agent_id,
        "strategy": done.strategy,
        "mode": done.mode,
        "merged_memories": done.merged_memories,
        "skipped_memories": done.skipped_memories,
        "merged_episodes": done.merged_episodes,
        "skipped_episodes": done.skipped_episodes,
        "profile_copied": done.profile_copied,
        "skipped_profile": done.skipped_profile,
    }
    deleted = done.source_deleted
    if deleted is not None:
        body["source_deleted"] = {
            "ok": True,
            "agent_id": deleted.agent_id,
            "deleted_memories": deleted.deleted_memories,
            "deleted_profiles": deleted.deleted_profiles,
            "deleted_episodes": deleted.deleted_episodes,
            "deleted_pending_tasks": deleted.deleted_pending_tasks,
        }
    left = done.left_at_source
    if left is not None:
        body["left_at_source"] = {
            "memories": left.memories,
            "episodes": left.episodes,
            "profiles": left.profiles,
        }
    return body


def _graph(counts: GraphRecords) -> JsonObject:
    return {"entity": counts.entity, "mention": counts.mention, "relation": counts.relation}
