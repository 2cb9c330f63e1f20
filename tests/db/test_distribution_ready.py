"""The schema stays distributable by tenant_id (Citus), proven on the migrated catalogue.

Citus cannot be installed here, so readiness is proven where it can be: every tenant
table carries a NOT NULL ``tenant_id`` and has row-level security; every primary key,
unique constraint, unique index and foreign key between tenant tables includes
``tenant_id`` (a distributed table can enforce uniqueness only when the distribution
column is part of the key, and a foreign key only between co-located rows); and every
named query that reads or writes a tenant table is scoped by the tenant (``$1``), except
the few cross-tenant control-plane statements listed below with their reason. Reference
tables (replicated to every node) are the control plane: tenants and the API keys that
authenticate before a tenant is known, the OAuth clients that register before any tenant
authorizes them, and the deployment-wide embedding settings.
"""

from __future__ import annotations

import re

import asyncpg

from service.db import sql

REFERENCE_TABLES = frozenset(
    {
        "tenants",
        "api_keys",
        "oauth_clients",
        "embedding_settings",
        "alembic_version",
        # operators are no tenant's (migration 0018): their keys and console sessions
        "operator_keys",
        "console_operator_sessions",
    }
)

CROSS_TENANT_QUERIES = {
    "claim_embedding_jobs": "the queue worker leases due jobs of every tenant (owner role)",
    "fail_embedding_jobs": "the worker settles the jobs it leased, by job id, across tenants",
    "tenant_ids": "the worker and re-embedding walk the tenants (control plane)",
    "use_oauth_code": "a presented authorization code is resolved by its hash, like an API key",
    "revoke_code_family": "a replayed code is resolved by its hash; its family by its tenant",
    "rotate_refresh_token": "a presented refresh token is resolved by its hash, like an API key",
    "revoke_refresh_family": "a reused refresh token is found by its hash, its family by tenant",
    "revoke_oauth_token": "a presented token is resolved by its hash and its client, like a key",
    "access_token_for_auth": "a presented access token is resolved by its hash, like an API key",
    "delete_expired_oauth": "expired codes and tokens of every tenant are dropped (owner role)",
    "console_session_for_auth": "a presented console session is resolved by its hash, like a key",
    "delete_console_session": "sign-out names the session by its hash, like a token revocation",
    "delete_ended_console_sessions": "ended console sessions of every tenant are dropped",
    "operator_tenants": "an operator's page of tenants, by slug (control plane, no content)",
}
"""Named queries that touch tenant tables without a tenant parameter, and why."""


async def _tenant_tables(conn: asyncpg.Connection[asyncpg.Record]) -> dict[str, dict[str, bool]]:
    rows = await conn.fetch(
        """
        SELECT c.relname, c.relrowsecurity AS rls,
               EXISTS (SELECT 1 FROM pg_attribute a
                       WHERE a.attrelid = c.oid AND a.attname = 'tenant_id'
                         AND a.attnotnull AND NOT a.attisdropped) AS has_tenant
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
        """
    )
    return {
        row["relname"]: {"rls": row["rls"], "has_tenant": row["has_tenant"]}
        for row in rows
        if row["relname"] not in REFERENCE_TABLES
    }


async def _keys(conn: asyncpg.Connection[asyncpg.Record]) -> list[asyncpg.Record]:
    """Primary keys, unique constraints, unique indexes and foreign keys with their columns."""
    return await conn.fetch(
        """
        SELECT c.relname AS tbl, k.conname AS name, k.contype AS kind,
               array(SELECT a.attname FROM unnest(k.conkey) AS key(num)
                     JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = key.num)
                   AS columns,
               f.relname AS ref_table,
               array(SELECT a.attname FROM unnest(k.confkey) AS key(num)
                     JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = key.num)
                   AS ref_columns
        FROM pg_constraint k
        JOIN pg_class c ON c.oid = k.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_class f ON f.oid = k.confrelid
        WHERE n.nspname = 'public' AND k.contype IN ('p', 'u', 'f')
        UNION ALL
        SELECT t.relname, i.relname, 'i',
               array(SELECT a.attname FROM unnest(x.indkey) AS key(num)
                     JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = key.num),
               NULL, NULL
        FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_class t ON t.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public' AND x.indisunique AND NOT x.indisprimary
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)
        """
    )


async def test_every_tenant_table_carries_tenant_id_and_row_level_security(
    direct_database_url: str,
) -> None:
    conn = await asyncpg.connect(direct_database_url)
    try:
        tables = await _tenant_tables(conn)
    finally:
        await conn.close()
    assert {"memories", "episodes", "agents", "profiles", "embedding_jobs"} <= set(tables)
    missing = sorted(name for name, facts in tables.items() if not facts["has_tenant"])
    unprotected = sorted(name for name, facts in tables.items() if not facts["rls"])
    assert missing == [], f"tenant tables without a NOT NULL tenant_id: {missing}"
    assert unprotected == [], f"tenant tables without row-level security: {unprotected}"


async def test_every_key_and_foreign_key_of_a_tenant_table_includes_tenant_id(
    direct_database_url: str,
) -> None:
    conn = await asyncpg.connect(direct_database_url)
    try:
        tables = await _tenant_tables(conn)
        keys = await _keys(conn)
    finally:
        await conn.close()
    problems = []
    for key in keys:
        if key["tbl"] not in tables:
            continue
        if "tenant_id" not in key["columns"]:
            problems.append(f"{key['tbl']}.{key['name']} ({key['kind']}) lacks tenant_id")
        foreign = key["kind"] == "f" and key["ref_table"] in tables
        if foreign and "tenant_id" not in key["ref_columns"]:
            problems.append(f"{key['tbl']}.{key['name']} references without tenant_id")
    assert problems == []


def _tenant_tables_named(statement: str, tables: frozenset[str]) -> set[str]:
    body = "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--"))
    return {
        table
        for table in tables
        if re.search(rf"\b(FROM|JOIN|UPDATE|INTO|USING)\s+{table}\b", body, re.IGNORECASE)
    }


def _scoped(statement: str) -> bool:
    """Filters on the tenant parameter, or inserts rows whose tenant is the parameter."""
    if re.search(r"tenant_id\s*=\s*(\$1|ANY\s*\(\s*\$1)", statement):
        return True
    insert = re.search(r"INSERT INTO \w+(\s+AS\s+\w+)?\s*\(\s*tenant_id\b", statement)
    return bool(insert and re.search(r"(VALUES\s*\(\s*\$1\b|SELECT\s+\$1\b)", statement))


async def test_every_query_of_a_tenant_table_is_scoped_by_the_tenant(
    direct_database_url: str,
) -> None:
    conn = await asyncpg.connect(direct_database_url)
    try:
        tables = frozenset(await _tenant_tables(conn))
    finally:
        await conn.close()
    unscoped = sorted(
        name
        for name, statement in sql.QUERIES.items()
        if _tenant_tables_named(statement, tables)
        and not _scoped(statement)
        and re.sub(r"_\d+$", "", name) not in CROSS_TENANT_QUERIES
    )
    assert unscoped == [], f"queries of tenant tables without a tenant scope: {unscoped}"
    stale = set(CROSS_TENANT_QUERIES) - {re.sub(r"_\d+$", "", name) for name in sql.QUERIES}
    assert stale == set(), f"listed cross-tenant queries that no longer exist: {stale}"
