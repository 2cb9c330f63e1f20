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

-- use_oauth_code --
-- Redeem an authorization code once: it is marked used (whatever the outcome of the
-- request) and given the family its tokens will carry; its expiry moves to now, so no
-- other reader takes it for a live code. The row is kept to detect a replay. With whether
-- it was unexpired and the key it was issued from is still valid. No row: unknown or used.
-- $1 code_hash bytea
WITH pending AS (
    SELECT tenant_id, code_hash, expires_at FROM oauth_codes
    WHERE code_hash = $1 AND used_at IS NULL
    FOR UPDATE
), used AS (
    UPDATE oauth_codes c
    SET used_at = now(), expires_at = least(c.expires_at, now()),
        family_id = gen_random_uuid()
    FROM pending p
    WHERE c.tenant_id = p.tenant_id AND c.code_hash = p.code_hash
    RETURNING c.tenant_id, c.key_prefix, c.client_id, c.redirect_uri, c.code_challenge,
              c.resource, c.scope, c.family_id, p.expires_at AS was_expiring
)
SELECT used.tenant_id, used.key_prefix, used.client_id, used.redirect_uri,
       used.code_challenge, used.resource, used.scope, used.family_id,
       used.was_expiring > now() AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > now()) AS usable
FROM used
JOIN api_keys k ON k.tenant_id = used.tenant_id AND k.prefix = used.key_prefix

-- revoke_code_family --
-- A redeemed code presented again: every token issued from it (its family, rotations
-- included) is deleted. One row naming the grant when the code was a used one.
-- $1 code_hash bytea
WITH replayed AS (
    SELECT tenant_id, family_id, client_id, key_prefix FROM oauth_codes
    WHERE code_hash = $1 AND used_at IS NOT NULL
), revoked AS (
    DELETE FROM oauth_tokens o USING replayed r
    WHERE o.tenant_id = r.tenant_id AND o.family_id = r.family_id
    RETURNING o.token_hash
)
SELECT r.tenant_id, r.client_id, r.key_prefix,
       (SELECT count(*) FROM revoked)::int AS tokens_revoked
FROM replayed r

-- insert_oauth_token --
-- Store an access or refresh token's hash, in its family.
-- $1 tenant_id uuid, $2 token_hash bytea, $3 kind text, $4 key_prefix text, $5 client_id text,
-- $6 resource text, $7 scope text, $8 lifetime_seconds float8, $9 family_id uuid
INSERT INTO oauth_tokens (tenant_id, token_hash, kind, key_prefix, client_id, resource, scope,
                          expires_at, family_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8), $9)

-- rotate_refresh_token --
-- Exchange a refresh token once (rotation): it becomes kind 'rotated', kept until it would
-- have expired so that its reuse is detected; a token issued before families gets one now.
-- With whether it and the key it was issued from are still valid. No row: unknown or used.
-- $1 token_hash bytea
WITH rotated AS (
    UPDATE oauth_tokens SET kind = 'rotated', rotated_at = now(),
                            family_id = coalesce(family_id, gen_random_uuid())
    WHERE token_hash = $1 AND kind = 'refresh'
    RETURNING tenant_id, key_prefix, client_id, resource, scope, family_id, expires_at
)
SELECT rotated.tenant_id, rotated.key_prefix, rotated.client_id, rotated.resource,
       rotated.scope, rotated.family_id,
       rotated.expires_at > now() AND k.revoked_at IS NULL
           AND (k.expires_at IS NULL OR k.expires_at > now()) AS usable
FROM rotated
JOIN api_keys k ON k.tenant_id = rotated.tenant_id AND k.prefix = rotated.key_prefix

-- revoke_refresh_family --
-- A rotated refresh token presented again: every token of its family is deleted (access
-- tokens too, so they are refused on the next request). One row naming the grant when
-- the token was a rotated one.
-- $1 token_hash bytea
WITH reused AS (
    SELECT tenant_id, family_id, client_id, key_prefix FROM oauth_tokens
    WHERE token_hash = $1 AND kind = 'rotated'
), revoked AS (
    DELETE FROM oauth_tokens o USING reused r
    WHERE o.tenant_id = r.tenant_id AND o.family_id = r.family_id
    RETURNING o.token_hash
)
SELECT r.tenant_id, r.client_id, r.key_prefix,
       (SELECT count(*) FROM revoked)::int AS tokens_revoked
FROM reused r

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
-- Drop codes and tokens that expired more than a day ago (run when a code is issued): a
-- used code's replay is detected for a day, a rotated token's reuse until a day after it
-- would have expired.
WITH codes AS (DELETE FROM oauth_codes WHERE expires_at < now() - interval '1 day')
DELETE FROM oauth_tokens WHERE expires_at < now() - interval '1 day'

-- lock_oauth_registrations --
-- Registrations one at a time (a transaction-scoped advisory lock), so the overall cap
-- counts every registration that committed before this one.
SELECT pg_advisory_xact_lock(hashtext('cpersona.oauth_registrations'))

-- insert_oauth_client --
-- Register an OAuth client unless $4 clients (0 = no cap) registered within the last hour;
-- returns its client_id, or no row when the cap is reached.
-- $1 client_id text, $2 secret_hash bytea (NULL = public client), $3 metadata jsonb,
-- $4 cap int
INSERT INTO oauth_clients (client_id, secret_hash, metadata)
SELECT $1, $2, $3
WHERE $4 = 0
   OR (SELECT count(*) FROM (
           SELECT 1 FROM oauth_clients WHERE created_at > now() - interval '1 hour' LIMIT $4
       ) AS recent) < $4
RETURNING client_id

-- oauth_registration_wait --
-- Seconds until the oldest registration of the last hour leaves the window (the overall
-- cap's Retry-After).
SELECT coalesce(extract(epoch FROM min(created_at) + interval '1 hour' - now()), 0)::float8
FROM oauth_clients
WHERE created_at > now() - interval '1 hour'

-- mark_oauth_client_used --
-- Note the first token issued to a client (later ones change nothing).
-- $1 client_id text
UPDATE oauth_clients SET used_at = now() WHERE client_id = $1 AND used_at IS NULL

-- delete_unused_oauth_clients --
-- Delete up to $2 clients never issued a token that registered over $1 seconds ago; returns
-- how many went.
-- $1 older_than_seconds float8, $2 batch int
WITH gone AS (
    DELETE FROM oauth_clients
    WHERE client_id IN (
        SELECT client_id FROM oauth_clients
        WHERE used_at IS NULL AND created_at < now() - make_interval(secs => $1)
        ORDER BY created_at
        LIMIT $2
    )
    RETURNING 1
)
SELECT count(*) FROM gone
