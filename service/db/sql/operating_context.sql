-- operating_context --
-- The tenant's operating context; no row when none is set (dormant).
-- $1 tenant_id uuid
SELECT revision, document, updated_at FROM operating_contexts WHERE tenant_id = $1

-- scope_admin_to_tenant --
-- Let an admin transaction pass the tenant_isolation policy for one tenant
-- (the owner role is subject to RLS too: the table forces it). Transaction-local.
-- $1 tenant_id text
SELECT set_config('app.tenant_id', $1, true)

-- upsert_operating_context --
-- Set (or replace) the tenant's operating context.
-- $1 tenant_id uuid, $2 revision text, $3 document jsonb
INSERT INTO operating_contexts (tenant_id, revision, document)
VALUES ($1, $2, $3)
ON CONFLICT (tenant_id) DO UPDATE
    SET revision = EXCLUDED.revision, document = EXCLUDED.document, updated_at = now()
RETURNING updated_at

-- delete_operating_context --
-- Remove the tenant's operating context; NULL when there was none.
-- $1 tenant_id uuid
DELETE FROM operating_contexts WHERE tenant_id = $1
RETURNING revision
