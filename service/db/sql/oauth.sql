-- insert_oauth_client --
-- Register an OAuth client (dynamic client registration).
-- $1 client_id text, $2 secret_hash bytea (NULL = public client), $3 metadata jsonb
INSERT INTO oauth_clients (client_id, secret_hash, metadata) VALUES ($1, $2, $3)

-- oauth_client --
-- One registered client by its id.
-- $1 client_id text
SELECT client_id, secret_hash, metadata FROM oauth_clients WHERE client_id = $1

-- insert_oauth_code --
-- Store an authorization code's hash with what the token request must match.
-- $1 tenant_id uuid, $2 code_hash bytea, $3 client_id text, $4 key_prefix text,
-- $5 redirect_uri text, $6 code_challenge text, $7 resource text, $8 scope text,
-- $9 lifetime_seconds float8
INSERT INTO oauth_codes (tenant_id, code_hash, client_id, key_prefix, redirect_uri,
                         code_challenge, resource, scope, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))

-- take_oauth_code --
-- Consume an authorization code (single use: the row is gone whatever the outcome), with
-- whether it and the key it was issued from are still valid.
-- $1 code_hash bytea
WITH taken AS (
    DELETE FROM oauth_codes WHERE code_hash = $1
    RETURNING tenant_id, key_prefix, client_id, redirect_uri, code_challenge, resource, scope,
              expires_at
)
SELECT taken.tenant_id, taken.key_prefix, taken.client_id, taken.redirect_uri,
       taken.code_challenge, taken.resource, taken.scope,
       taken.expires_at > now() AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > now()) AS usable
FROM taken
JOIN api_keys k ON k.tenant_id = taken.tenant_id AND k.prefix = taken.key_prefix

-- insert_oauth_token --
-- Store an access or refresh token's hash.
-- $1 tenant_id uuid, $2 token_hash bytea, $3 kind text, $4 key_prefix text, $5 client_id text,
-- $6 resource text, $7 scope text, $8 lifetime_seconds float8
INSERT INTO oauth_tokens (tenant_id, token_hash, kind, key_prefix, client_id, resource, scope,
                          expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))

-- take_refresh_token --
-- Consume a refresh token (rotation: each is exchanged once), with whether it and the key it
-- was issued from are still valid.
-- $1 token_hash bytea
WITH taken AS (
    DELETE FROM oauth_tokens WHERE token_hash = $1 AND kind = 'refresh'
    RETURNING tenant_id, key_prefix, client_id, resource, scope, expires_at
)
SELECT taken.tenant_id, taken.key_prefix, taken.client_id, taken.resource, taken.scope,
       taken.expires_at > now() AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > now()) AS usable
FROM taken
JOIN api_keys k ON k.tenant_id = taken.tenant_id AND k.prefix = taken.key_prefix

-- access_token_for_auth --
-- The caller of a presented access token: its key's grants, tool set, tenant, validity
-- now, and its client (the grant is the client and the key).
-- $1 token_hash bytea
SELECT o.resource, k.prefix, k.label, k.grants, k.tool_set, t.id AS tenant_id,
       t.slug AS tenant_slug,
       o.expires_at > now() AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > now()) AS usable,
       o.client_id
FROM oauth_tokens o
JOIN api_keys k ON k.tenant_id = o.tenant_id AND k.prefix = o.key_prefix
JOIN tenants t ON t.id = o.tenant_id
WHERE o.token_hash = $1 AND o.kind = 'access'

-- revoke_oauth_token --
-- Revoke one client's token (RFC 7009): the token row goes, and a refresh token takes the
-- access tokens issued to the same client from the same key with it (the same grant).
-- $1 token_hash bytea, $2 client_id text
WITH revoked AS (
    DELETE FROM oauth_tokens WHERE token_hash = $1 AND client_id = $2
    RETURNING tenant_id, key_prefix, kind
)
DELETE FROM oauth_tokens o
USING revoked r
WHERE r.kind = 'refresh' AND o.kind = 'access' AND o.client_id = $2
  AND o.tenant_id = r.tenant_id AND o.key_prefix = r.key_prefix

-- delete_expired_oauth --
-- Drop codes and tokens that expired more than a day ago (run when a code is issued).
WITH codes AS (DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 day')
DELETE FROM oauth_tokens WHERE expires_at < now() - interval '1 day'
