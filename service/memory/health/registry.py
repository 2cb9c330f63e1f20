"""The check_health registry: every check in reading (and repair) order.

The order matters for fix runs: content rewrites run before duplicate_content (a cut
or stripped row can become a duplicate), and the embedding checks after them (a
rewritten row lost its vector and is queued again). CPersona's SQLite-only checks
are replaced in place by their Postgres counterparts (see ``deployment``), and their
old names are accepted as aliases so existing callers keep working.
"""

from __future__ import annotations

from types import MappingProxyType

from service.memory.health import (
    content,
    deployment,
    embeddings,
    operating,
    records,
    supersession,
    timestamps,
)
from service.memory.health.base import Check

CHECKS: tuple[Check, ...] = (
    Check("memory_annotation", "info", content.memory_annotation, content.fix_memory_annotation),
    Check("discord_mention", "info", content.discord_mention, content.fix_discord_mention),
    Check("oversized_content", "warn", content.oversized_content, content.fix_oversized_content),
    Check("duplicate_content", "warn", content.duplicate_content, content.fix_duplicate_content),
    Check(
        "embedding_dimension",
        "critical",
        embeddings.embedding_dimension,
        embeddings.fix_embedding_dimension,
    ),
    Check("null_embedding", "warn", embeddings.null_embedding, embeddings.fix_null_embedding),
    Check(
        "null_episode_embedding",
        "warn",
        embeddings.null_episode_embedding,
        embeddings.fix_null_episode_embedding,
    ),
    Check("missing_passages", "info", embeddings.missing_passages, embeddings.fix_missing_passages),
    Check("search_index_validity", "warn", deployment.search_index_validity, level="deployment"),
    Check("migrations_at_head", "critical", deployment.migrations_at_head, level="deployment"),
    Check("schema_objects", "critical", deployment.schema_objects, level="deployment"),
    Check("index_validity", "critical", deployment.index_validity, level="deployment"),
    Check("rls_enabled", "critical", deployment.rls_enabled, level="deployment"),
    Check("axis_hygiene", "warn", records.axis_hygiene),
    Check("invalid_json", "warn", records.invalid_json, records.fix_invalid_json),
    Check(
        "invalid_timestamp",
        "warn",
        timestamps.invalid_timestamp,
        timestamps.fix_invalid_timestamp,
    ),
    Check(
        "missing_episode_start_time",
        "info",
        timestamps.missing_episode_start_time,
        timestamps.fix_missing_episode_start_time,
    ),
    Check(
        "timestamp_format_drift",
        "warn",
        timestamps.timestamp_format_drift,
        timestamps.fix_timestamp_format_drift,
    ),
    Check(
        "episode_timestamp_format_drift",
        "warn",
        timestamps.episode_timestamp_format_drift,
        timestamps.fix_episode_timestamp_format_drift,
    ),
    Check(
        "stale_pending_tasks",
        "warn",
        embeddings.stale_pending_tasks,
        embeddings.fix_stale_pending_tasks,
    ),
    Check("missing_profile", "info", content.missing_profile),
    Check("empty_content", "warn", content.empty_content, content.fix_empty_content),
    Check(
        "invalid_source_type",
        "warn",
        records.invalid_source_type,
        records.fix_invalid_source_type,
    ),
    Check("oversized_profile", "warn", content.oversized_profile, content.fix_oversized_profile),
    Check("anonymous_source", "info", records.anonymous_source),
    Check("vector_fallback_config", "info", embeddings.vector_fallback_config),
    Check("operating_context_parse", "warn", operating.operating_context_parse),
    Check("operating_context_size", "info", operating.operating_context_size),
    Check(
        "supersession",
        "warn",
        supersession.supersession_chains,
        supersession.fix_supersession_chains,
    ),
)

CHECK_NAMES: tuple[str, ...] = tuple(check.name for check in CHECKS)
BY_NAME = MappingProxyType({check.name: check for check in CHECKS})
ALIASES = MappingProxyType(
    {
        "fts_integrity": "search_index_validity",
        "schema_version": "migrations_at_head",
        "sqlite_integrity": "index_validity",
        "dedup_msg_id_index": "schema_objects",
    }
)


def resolve(names: list[str]) -> tuple[list[str], list[str]]:
    """(our check names in the order given, without repeats; the unknown names)."""
    chosen: list[str] = []
    unknown: list[str] = []
    for name in names:
        ours = ALIASES.get(name, name)
        if ours not in BY_NAME:
            unknown.append(name)
        elif ours not in chosen:
            chosen.append(ours)
    return chosen, unknown
