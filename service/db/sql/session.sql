-- enter_tenant --
-- Confine the current transaction: switch to the application role (RLS applies)
-- and set the tenant the policies compare against. Both are transaction-local.
-- $1 role text, $2 tenant_id text
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true)

-- ping --
-- Liveness of the database connection.
SELECT 1

-- current_revision --
-- The Alembic revision the database is at (NULL before the first migration).
SELECT (SELECT version_num FROM alembic_version LIMIT 1)
