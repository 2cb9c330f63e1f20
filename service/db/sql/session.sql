-- enter_tenant --
-- Confine the current transaction: switch to the application role (RLS applies)
-- and set the tenant the policies compare against. Also let HNSW scans continue past
-- rows of other agents (pgvector iterative scan), so a small agent in a large table
-- still gets its nearest rows. All settings are transaction-local.
-- $1 role text, $2 tenant_id text
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true)

-- ping --
-- Liveness of the database connection.
SELECT 1

-- current_revision --
-- The Alembic revision the database is at (NULL before the first migration).
SELECT (SELECT version_num FROM alembic_version LIMIT 1)
