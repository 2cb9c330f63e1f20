-- upsert_pause --
-- Pause writes of a tenant (session_key '') or of one session for ttl seconds from the
-- database clock; a second pause of the same scope replaces the expiry (spec 10.5).
-- $1 tenant_id uuid, $2 session_key text, $3 ttl_seconds integer, $4 created_by text
INSERT INTO persistence_pauses (tenant_id, session_key, expires_at, created_by)
VALUES ($1, $2, now() + make_interval(secs => $3), $4)
ON CONFLICT (tenant_id, session_key)
DO UPDATE SET expires_at = EXCLUDED.expires_at, created_at = now(),
              created_by = EXCLUDED.created_by
RETURNING expires_at

-- delete_expired_pauses --
-- Forget the tenant's pauses that have run out (they mean nothing; keeps the table small).
-- $1 tenant_id uuid
DELETE FROM persistence_pauses WHERE tenant_id = $1 AND expires_at <= now()

-- delete_pause --
-- Lift one pause; whether it was still in force, NULL when there was none.
-- $1 tenant_id uuid, $2 session_key text
DELETE FROM persistence_pauses
WHERE tenant_id = $1 AND session_key = $2
RETURNING expires_at > now() AS was_active

-- pauses_in_force --
-- The pauses a write of this session obeys, while in force: the tenant-wide one and the
-- session's own (two primary-key probes; $2 '' asks for the tenant-wide one only), with
-- their seconds left by the database clock. store_memory reads the same pauses inside
-- its statement (its pause CTE): a change to what a pause covers changes both.
-- $1 tenant_id uuid, $2 session_key text
SELECT session_key, expires_at, extract(epoch FROM expires_at - now())::float8 AS remaining
FROM persistence_pauses
WHERE tenant_id = $1 AND session_key IN ('', $2) AND expires_at > now()

-- lock_session_pauses --
-- Serialize the tenant's session-pause arming for the rest of the transaction (a
-- transaction-scoped advisory lock), so two calls count the live pauses in turn and the
-- bound holds exactly (docs/reliability.md, "CPersona 2.6 changes to the existing tools").
-- $1 tenant_id uuid
SELECT pg_advisory_xact_lock(hashtextextended('persistence_pauses:' || $1::uuid::text, 0))

-- live_session_pauses --
-- How many session keys of the tenant other than $2 hold a pause in force (the tenant-wide
-- pause, key '', is not one of them).
-- $1 tenant_id uuid, $2 session_key text
SELECT count(*) FROM persistence_pauses
WHERE tenant_id = $1 AND session_key NOT IN ('', $2) AND expires_at > now()
