-- export_file --
-- One live (not yet expired) file of a tenant's export area by name, or no row.
-- $1 tenant_id uuid, $2 name text
SELECT name, storage, agents, writer_key_id, size_bytes, created_at, expires_at
FROM export_files
WHERE tenant_id = $1 AND name = $2 AND expires_at > clock_timestamp()

-- lock_export_area --
-- Serialise the writes of one tenant's export area until the transaction ends, so the
-- overwrite check, the quota sum and the new row see no concurrent write in between.
-- $1 tenant_id uuid
SELECT pg_advisory_xact_lock(hashtextextended('cpersona.export_area.' || $1::uuid::text, 0))

-- export_area_usage --
-- Bytes held by the tenant's live files other than name $2 (the one being replaced).
-- $1 tenant_id uuid, $2 name text
SELECT coalesce(sum(size_bytes), 0)::bigint
FROM export_files
WHERE tenant_id = $1 AND name <> $2 AND expires_at > clock_timestamp()

-- save_export_file --
-- Record a new version of a file (insert, or replace the previous version of the name,
-- expired or not) and return the storage of the version it replaced (NULL when none),
-- which the caller removes from disk once this commits.
-- $1 tenant_id uuid, $2 name text, $3 storage text, $4 agents text[],
-- $5 writer_key_id text, $6 size_bytes bigint, $7 retention seconds float8
WITH previous AS (
    SELECT storage FROM export_files WHERE tenant_id = $1 AND name = $2
), saved AS (
    INSERT INTO export_files (tenant_id, name, storage, agents, writer_key_id, size_bytes,
                              created_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp(),
            clock_timestamp() + make_interval(secs => $7))
    ON CONFLICT (tenant_id, name) DO UPDATE
    SET storage = EXCLUDED.storage, agents = EXCLUDED.agents,
        writer_key_id = EXCLUDED.writer_key_id, size_bytes = EXCLUDED.size_bytes,
        created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
    RETURNING 1
)
SELECT (SELECT storage FROM previous) AS replaced

-- delete_expired_export_files --
-- Forget the tenant's files whose retention ran out; their storage names, to remove.
-- $1 tenant_id uuid
DELETE FROM export_files
WHERE tenant_id = $1 AND expires_at <= clock_timestamp()
RETURNING storage

-- delete_agent_export_files --
-- Forget every file of the tenant that holds records of agent $2 (delete_agent_data:
-- deleted data must not survive in an export); their storage names, to remove.
-- $1 tenant_id uuid, $2 agent name text
DELETE FROM export_files
WHERE tenant_id = $1 AND $2 = ANY (agents)
RETURNING storage

-- export_storage_names --
-- The storage name of every file the tenant's catalogue knows (expired ones too): the
-- sweep removes any other file it finds in the tenant's directory.
-- $1 tenant_id uuid
SELECT storage FROM export_files WHERE tenant_id = $1
