-- insert_tenant --
-- Create a tenant; NULL when the slug is taken.
-- $1 slug text, $2 name text
INSERT INTO tenants (slug, name) VALUES ($1, $2)
ON CONFLICT (slug) DO NOTHING
RETURNING id, slug, name, created_at

-- list_tenants --
-- Every tenant with its key and agent counts, oldest first.
SELECT t.id, t.slug, t.name, t.created_at,
       (SELECT count(*) FROM api_keys k
         WHERE k.tenant_id = t.id AND k.revoked_at IS NULL) AS active_keys
FROM tenants t
ORDER BY t.created_at, t.slug

-- tenant_by_slug --
-- One tenant by its slug.
-- $1 slug text
SELECT id, slug, name, created_at FROM tenants WHERE slug = $1

-- count_tenants --
-- How many tenants exist (first-start detection).
SELECT count(*) FROM tenants

-- insert_api_key --
-- Store a new key's hash and metadata.
-- $1 tenant_id uuid, $2 prefix text, $3 key_hash bytea, $4 label text, $5 grants jsonb,
-- $6 expires_at timestamptz (NULL = never), $7 tool_set text (all|everyday)
INSERT INTO api_keys (tenant_id, prefix, key_hash, label, grants, expires_at, tool_set)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING prefix, created_at

-- api_key_for_auth --
-- The key row and its tenant for a presented key's prefix.
-- $1 prefix text
SELECT k.prefix, k.key_hash, k.label, k.grants, k.tool_set, k.expires_at, k.revoked_at,
       k.last_used_at, k.expires_at <= now() AS expired,
       k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute' AS touch_due,
       t.id AS tenant_id, t.slug AS tenant_slug
FROM api_keys k
JOIN tenants t ON t.id = k.tenant_id
WHERE k.prefix = $1

-- touch_api_key --
-- Record use of a key (at most once a minute, see api_key_for_auth.touch_due).
-- $1 prefix text
UPDATE api_keys SET last_used_at = now() WHERE prefix = $1

-- list_api_keys --
-- A tenant's keys, newest first (never the hash).
-- $1 tenant_id uuid
SELECT prefix, label, grants, tool_set, created_at, last_used_at, expires_at, revoked_at
FROM api_keys
WHERE tenant_id = $1
ORDER BY created_at DESC, prefix

-- revoke_api_key --
-- Revoke a key by its prefix; NULL when no such key.
-- $1 prefix text
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE prefix = $1
RETURNING prefix, revoked_at
