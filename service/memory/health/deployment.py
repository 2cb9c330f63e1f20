"""Deployment checks: Postgres counterparts of CPersona's SQLite-only checks.

They read the catalogs and ``alembic_version`` in an admin transaction and contain
no tenant data, so every tenant sees them as they are. None repairs anything: an
index, a migration or a policy is the operator's to fix (the hints say how).

=====================  ==============================================================
CPersona (SQLite)      here
=====================  ==============================================================
schema_version         migrations_at_head: alembic_version is the scripts' head
sqlite_integrity       index_validity: every index of the service's tables valid,
                       ready and live (a failed CREATE INDEX CONCURRENTLY is not)
fts_integrity          search_index_validity: the tsvector, trigram and HNSW indexes
                       recall relies on exist and are valid
dedup_msg_id_index,    schema_objects: the unique indexes that enforce dedup and
schema_objects         identity, and a tenant_isolation policy on every tenant table
(none)                 rls_enabled: row-level security enabled on every tenant table
=====================  ==============================================================
"""

from __future__ import annotations

import asyncio
from typing import Any

from service.db import migrate
from service.db.health import schema as schema_queries
from service.db.pool import Connection
from service.memory.health.base import Findings, Scope

SEARCH_INDEXES = (
    "memories_tsv",
    "memories_trgm",
    "episodes_tsv",
    "episodes_trgm",
    "memories_embedding_384",
    "memories_embedding_1536",
    "episodes_embedding_384",
    "episodes_embedding_1536",
)
UNIQUE_INDEXES = {
    "memories_dedup_content": "memories",
    "memories_dedup_msg_id": "memories",
    "agents_tenant_name_key": "agents",
    "profiles_agent_user_key": "profiles",
    "embedding_jobs_item_key": "embedding_jobs",
    "recall_calibration_scope": "recall_calibration",
    "api_keys_prefix_key": "api_keys",
    "tenants_slug_key": "tenants",
}
POLICY = "tenant_isolation"
NO_RLS_BY_DESIGN = frozenset({"api_keys"})  # the application role cannot read it at all
UNFORCED_BY_DESIGN = frozenset(
    # drained across tenants by the worker; OAuth codes and tokens (migration 0012) and
    # console sessions (0018) are resolved by their hash before the tenant is known
    # (cpersona_app cannot read them)
    {"embedding_jobs", "oauth_codes", "oauth_tokens", "console_sessions"}
)


async def migrations_at_head(conn: Connection, scope: Scope) -> Findings | None:
    revisions = await schema_queries.health_alembic_revisions(conn)
    head = await asyncio.to_thread(migrate.head_revision)
    if revisions == [head]:
        return None
    return {
        "type": "migrations_not_at_head",
        "db_revisions": revisions,
        "expected": head,
        "hint": "run `cpersona-service migrate` (the release step of every deploy)",
    }


async def index_validity(conn: Connection, scope: Scope) -> Findings | None:
    states = await schema_queries.health_index_states(conn)
    broken = [s for s in states if not (s.valid and s.ready and s.live)]
    if not broken:
        return None
    return {
        "type": "invalid_indexes",
        "indexes": [
            {"index": s.name, "table": s.table, "valid": s.valid, "ready": s.ready, "live": s.live}
            for s in broken
        ],
        "hint": "REINDEX INDEX CONCURRENTLY <index> (or drop and re-create it)",
    }


async def search_index_validity(conn: Connection, scope: Scope) -> Findings | None:
    states = {s.name: s for s in await schema_queries.health_index_states(conn)}
    missing = [name for name in SEARCH_INDEXES if name not in states]
    invalid = [name for name in SEARCH_INDEXES if name in states and not states[name].valid]
    if not missing and not invalid:
        return None
    return {
        "type": "search_index_problem",
        "missing": missing,
        "invalid": invalid,
        "hint": (
            "recall stays correct but scans rows instead of using the index; re-create a "
            "missing index from its migration, REINDEX INDEX CONCURRENTLY an invalid one"
        ),
    }


def _missing_unique(states: list[schema_queries.IndexState]) -> list[dict[str, Any]]:
    found = {s.name: s for s in states}
    missing = []
    for name, table in UNIQUE_INDEXES.items():
        state = found.get(name)
        if state is None or not state.unique or state.table != table:
            missing.append({"object": name, "kind": "unique index", "table": table})
    return missing


async def schema_objects(conn: Connection, scope: Scope) -> Findings | None:
    missing = _missing_unique(await schema_queries.health_index_states(conn))
    for table in await schema_queries.health_table_security(conn):
        if table.table not in NO_RLS_BY_DESIGN and POLICY not in table.policies:
            missing.append({"object": POLICY, "kind": "policy", "table": table.table})
    if not missing:
        return None
    return {
        "type": "schema_object_drift",
        "missing": missing,
        "hint": "the schema differs from the migrations; restore the objects from them",
    }


async def rls_enabled(conn: Connection, scope: Scope) -> Findings | None:
    """Row-level security is the second wall behind every query's tenant filter."""
    tables = [
        t
        for t in await schema_queries.health_table_security(conn)
        if t.table not in NO_RLS_BY_DESIGN
    ]
    disabled = [t.table for t in tables if not t.enabled]
    unforced = [t.table for t in tables if not t.forced and t.table not in UNFORCED_BY_DESIGN]
    if not disabled and not unforced:
        return None
    issue: Findings = {"type": "rls_disabled", "tables": disabled, "not_forced": unforced}
    if not disabled:
        issue["severity"] = "warn"
    issue["hint"] = "ALTER TABLE <table> ENABLE ROW LEVEL SECURITY; ... FORCE ROW LEVEL SECURITY"
    return issue
