-- insert_console_session --
-- Open a console session for the key a person signed in with: its id's hash, how long
-- it may stay idle and when it ends whatever its use.
-- $1 tenant_id uuid, $2 session_hash bytea, $3 key_prefix text, $4 idle_seconds int4,
-- $5 lifetime_seconds float8
INSERT INTO console_sessions (tenant_id, session_hash, key_prefix, idle_seconds, expires_at)
VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))

-- console_session_for_auth --
-- The caller of a presented console session: used within its idle limit, before its
-- absolute expiry, and its key neither revoked nor expired; the use is recorded (the
-- idle limit runs from now). No row: unknown or ended session.
-- $1 session_hash bytea
UPDATE console_sessions s
SET seen_at = now()
FROM api_keys k, tenants t
WHERE s.session_hash = $1
  AND k.tenant_id = s.tenant_id AND k.prefix = s.key_prefix AND t.id = s.tenant_id
  AND s.seen_at + make_interval(secs => s.idle_seconds) > now()
  AND s.expires_at > now()
  AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
RETURNING k.prefix, k.label, k.grants, k.tool_set, t.id AS tenant_id, t.slug AS tenant_slug

-- delete_console_session --
-- Sign-out: the session's row goes, so its cookie authenticates nothing any more.
-- $1 session_hash bytea
DELETE FROM console_sessions WHERE session_hash = $1

-- delete_ended_console_sessions --
-- Drop sessions of every tenant that ended (idle, expired) before now (run at sign-in).
DELETE FROM console_sessions
WHERE expires_at <= now() OR seen_at + make_interval(secs => idle_seconds) <= now()
