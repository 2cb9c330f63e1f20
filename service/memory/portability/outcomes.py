"""What export_memories, import_memories and merge_memories did, as records
(docs/portability.md, "The format"; docs/portability.md, "Import rules").

The boundary renders them (``service.mcp.render.portability``) for the tools, the HTTP
import endpoint and the CLI alike, so all three answer the same bytes. The JSONL lines
of a file (``jsonl``) are a file format, not these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from service.db.portability import ItemCounts


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Exported:
    """A file written to the caller's export area: what it holds and where to fetch it
    (a signed URL valid until ``expires_at``, ISO-8601 UTC)."""

    path: str
    counts: ItemCounts
    download_url: str
    expires_at: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GraphRecords:
    """Declared-graph records of a file (format 1.1), by kind."""

    entity: int
    mention: int
    relation: int

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> GraphRecords | None:
        """The counts by kind; None when there are none."""
        if not any(counts.values()):
            return None
        return cls(entity=counts["entity"], mention=counts["mention"], relation=counts["relation"])


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Imported:
    """An import's (or dry run's) counts; ``imported_graph`` the declared-graph records it
    re-created and ``graph`` those it could not (None when there are none), ``errors`` the
    notes on records read but not taken (capped, with a final "... and N more")."""

    dry_run: bool
    imported_memories: int = 0
    skipped_memories: int = 0
    imported_episodes: int = 0
    skipped_episodes: int = 0
    profile_updated: bool = False
    imported_graph: GraphRecords | None = None
    graph: GraphRecords | None = None
    errors: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SourceDeleted:
    """What a move deleted at its source agent."""

    agent_id: str
    deleted_memories: int
    deleted_profiles: int
    deleted_episodes: int
    deleted_pending_tasks: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Merged:
    """A merge's (or dry run's) counts. ``source_deleted`` and ``left_at_source`` are set
    for a move only (a dry run reports the real run's numbers: the same statements ran)."""

    dry_run: bool
    source_agent_id: str
    target_agent_id: str
    strategy: str
    mode: str
    merged_memories: int = 0
    skipped_memories: int = 0
    merged_episodes: int = 0
    skipped_episodes: int = 0
    profile_copied: bool = False
    skipped_profile: bool = False
    source_deleted: SourceDeleted | None = None
    left_at_source: ItemCounts | None = None
