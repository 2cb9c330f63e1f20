-- insert_operator_key --
-- Store a new operator key's prefix and hash (key create --role operator).
-- $1 prefix text, $2 key_hash bytea, $3 label text, $4 expires_at timestamptz
INSERT INTO operator_keys (prefix, key_hash, label, expires_at) VALUES ($1, $2, $3, $4)

-- operator_key_for_auth --
-- The operator key of a presented key's prefix, with whether it is valid now.
-- $1 prefix text
SELECT prefix, key_hash, label,
       revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) AS usable
FROM operator_keys WHERE prefix = $1

-- revoke_operator_key --
-- Revoke an operator key (its console sessions end with it); NULL when none has the prefix.
-- $1 prefix text
UPDATE operator_keys SET revoked_at = coalesce(revoked_at, now()) WHERE prefix = $1
RETURNING revoked_at

-- insert_operator_session --
-- Open a console session for an operator key.
-- $1 session_hash bytea, $2 key_prefix text, $3 idle_seconds int4, $4 lifetime_seconds float8
INSERT INTO console_operator_sessions (session_hash, key_prefix, idle_seconds, expires_at)
VALUES ($1, $2, $3, now() + make_interval(secs => $4))

-- operator_session_for_auth --
-- The operator key of a live operator session (its use recorded); no row when it ended.
-- $1 session_hash bytea
UPDATE console_operator_sessions s
SET seen_at = now()
FROM operator_keys k
WHERE s.session_hash = $1 AND k.prefix = s.key_prefix
  AND s.seen_at + make_interval(secs => s.idle_seconds) > now()
  AND s.expires_at > now()
  AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
RETURNING k.prefix, k.label

-- delete_operator_session --
-- An operator's sign-out.
-- $1 session_hash bytea
DELETE FROM console_operator_sessions WHERE session_hash = $1

-- delete_ended_operator_sessions --
-- Drop operator sessions that ended (run at an operator's sign-in).
DELETE FROM console_operator_sessions
WHERE expires_at <= now() OR seen_at + make_interval(secs => idle_seconds) <= now()

-- operator_tenants --
-- One page of tenants by slug, for the operator view (no tenant data is read here).
-- $1 after text, $2 page_size int4
SELECT id, slug, created_at FROM tenants WHERE slug > $1 ORDER BY slug LIMIT $2

-- operator_tenant_health --
-- One tenant's aggregates for the operator view: agents, memories, episodes, calls and
-- tokens delivered in the last 30 UTC days, embedding jobs pending and the oldest one's
-- age. Counts only, never content (run in the tenant's own transaction).
-- $1 tenant_id uuid
SELECT (SELECT count(*) FROM agents WHERE tenant_id = $1)::int AS agents,
       (SELECT count(*) FROM memories WHERE tenant_id = $1)::int AS memories,
       (SELECT count(*) FROM episodes WHERE tenant_id = $1)::int AS episodes,
       (SELECT coalesce(sum(calls), 0) FROM usage_daily
        WHERE tenant_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - 30)::bigint AS calls,
       (SELECT coalesce(sum(tokens_delivered), 0) FROM usage_daily
        WHERE tenant_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - 30)::bigint
           AS tokens_delivered,
       (SELECT count(*) FROM embedding_jobs WHERE tenant_id = $1)::int AS pending,
       (SELECT extract(epoch FROM now() - min(created_at)) FROM embedding_jobs
        WHERE tenant_id = $1)::float8 AS oldest_pending_seconds
