-- health_alembic_revisions --
-- check_health migrations_at_head: the revision(s) recorded by Alembic (admin).
SELECT version_num FROM alembic_version ORDER BY version_num

-- health_index_states --
-- check_health index_validity / search_index_validity / schema_objects: every index on
-- the service's tables with its access method, uniqueness and state flags (admin). An
-- index left by a failed CREATE INDEX CONCURRENTLY is not valid; one being dropped is
-- not live.
SELECT i.relname AS index_name, t.relname AS table_name, am.amname AS method,
       x.indisunique AS is_unique, x.indisvalid AS valid, x.indisready AS ready,
       x.indislive AS live
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_am am ON am.oid = i.relam
WHERE n.nspname = current_schema()
ORDER BY t.relname, i.relname

-- health_table_security --
-- check_health rls_enabled / schema_objects: every table with a tenant_id column, whether
-- row-level security is enabled and forced on it, and the names of its policies (admin).
SELECT c.relname AS table_name, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
       coalesce(array_agg(p.polname ORDER BY p.polname) FILTER (WHERE p.polname IS NOT NULL),
                '{}'::name[]) AS policies
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_policy p ON p.polrelid = c.oid
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
  AND EXISTS (SELECT 1 FROM pg_attribute a
              WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
GROUP BY c.oid, c.relname, c.relrowsecurity, c.relforcerowsecurity
ORDER BY c.relname
