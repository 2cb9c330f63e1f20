"""The database catalogue the code is written against, read from a live database.

``catalogue(url)`` reads, from ``pg_catalog``, everything the service's SQL and its
security depend on: tables and views with their row-level-security flags, columns
(type, nullability, default, generation), constraints, indexes, policies, triggers,
functions, sequences, the grants of the service's roles, and the extensions. Each part
is a sorted list of plain strings, so two catalogues compare with ``==`` and a
difference prints as a readable diff. Facts that vary with the server rather than the
migrations (extension versions, LEAKPROOF, which needs a superuser, view bodies whose
formatting changes between major versions) are left out.

``schema.json`` beside this file is the catalogue of a database migrated to head. After
a migration that changes the schema on purpose, rewrite it with
``CPERSONA_WRITE_SCHEMA_SNAPSHOT=1 scripts/test tests/migrations`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

SNAPSHOT = Path(__file__).with_name("schema.json")
SCHEMAS = ("public", "ops")
ROLES = ("cpersona_app", "cpersona_ops")

QUERIES: dict[str, str] = {
    "relations": """
        SELECT format('%s.%s kind=%s rls=%s force=%s', n.nspname, c.relname, c.relkind,
                      c.relrowsecurity, c.relforcerowsecurity)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'S')""",
    "columns": """
        SELECT format('%s.%s.%s %s notnull=%s default=%s generated=%s', n.nspname, c.relname,
                      a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                      coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), a.attgenerated)
        FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p', 'v', 'm')
          AND a.attnum > 0 AND NOT a.attisdropped""",
    "constraints": """
        SELECT format('%s.%s %s %s', n.nspname, c.relname, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k
        JOIN pg_class c ON c.oid = k.conrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1::text[])""",
    "indexes": """
        SELECT indexdef FROM pg_indexes WHERE schemaname = ANY($1::text[])""",
    "policies": """
        SELECT format('%s.%s %s %s roles=%s using=%s check=%s', schemaname, tablename,
                      policyname, cmd, roles::text, coalesce(qual, '-'),
                      coalesce(with_check, '-'))
        FROM pg_policies WHERE schemaname = ANY($1::text[])""",
    "triggers": """
        SELECT pg_get_triggerdef(t.oid)
        FROM pg_trigger t
        JOIN pg_class c ON c.oid = t.tgrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1::text[]) AND NOT t.tgisinternal""",
    "functions": """
        SELECT format('%s.%s(%s) returns %s', n.nspname, p.proname,
                      pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid))
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM pg_depend dep
                          WHERE dep.objid = p.oid AND dep.deptype = 'e')""",
    "grants": """
        SELECT format('%s %s on %s.%s', grantee, privilege_type, table_schema, table_name)
        FROM information_schema.role_table_grants
        WHERE grantee::text = ANY($2::text[]) AND table_schema::text = ANY($1::text[])""",
    "roles": """
        SELECT format('%s login=%s bypassrls=%s', rolname, rolcanlogin, rolbypassrls)
        FROM pg_roles WHERE rolname = ANY($1::text[])""",
    "extensions": """
        SELECT extname FROM pg_extension WHERE extname <> 'plpgsql'""",
}


def _arguments(part: str, query: str) -> list[list[str]]:
    """The bound values of one part's query: the schemas ($1) and roles ($2); the roles
    part binds only the roles, as $1."""
    if part == "roles":
        return [list(ROLES)]
    return [list(SCHEMAS), list(ROLES)][: query.count("ANY($")]


def _normalise(line: str) -> str:
    return " ".join(line.split())


async def catalogue(url: str) -> dict[str, list[str]]:
    """The catalogue of the database at ``url`` (see the module docstring)."""
    conn = await asyncpg.connect(url)
    try:
        parts: dict[str, list[str]] = {}
        for part, query in QUERIES.items():
            args = _arguments(part, query)
            rows = await conn.fetch(query, *args)
            parts[part] = sorted(_normalise(str(row[0])) for row in rows)
        return parts
    finally:
        await conn.close()


def load_snapshot() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return data


def write_snapshot(parts: dict[str, list[str]]) -> None:
    SNAPSHOT.write_text(json.dumps(parts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def differences(expected: dict[str, list[str]], actual: dict[str, list[str]]) -> list[str]:
    """Readable lines: ``- part: entry`` missing from ``actual``, ``+ part: entry`` extra."""
    lines: list[str] = []
    for part in sorted(set(expected) | set(actual)):
        want, have = set(expected.get(part, [])), set(actual.get(part, []))
        lines += [f"- {part}: {entry}" for entry in sorted(want - have)]
        lines += [f"+ {part}: {entry}" for entry in sorted(have - want)]
    return lines
