-- store_memory --
-- The whole write of store (steps 6 and 8 of docs/tools.md, "Store steps") in one
-- statement, so the store transaction is one round trip between its BEGIN/tenant setup and
-- its COMMIT: the agent is registered on its first write, the dedup probes run, the row is
-- inserted when both miss, and its embedding job is queued with it (durable: committed with
-- the row). The msg_id probe looks in the caller's project scope set, the content probe
-- also in its channel scope set. ON CONFLICT absorbs a concurrent identical insert
-- (exact-bucket unique indexes). The agent is selected first (the common case); only a
-- missing one is inserted, and a concurrent first write of the same agent (committed
-- after this statement's snapshot) is returned by DO UPDATE instead of being missed.
-- The job (only when :queue_job) is dated an hour back like enqueue_embedding's. The
-- statement runs with cached plans: m.msg_id <> '' lets a generic plan use the partial
-- msg_id index (:msg_id <> '' alone does not imply its predicate).
-- With :pause_session the write obeys the persistence pause
-- (docs/tools.md, "pause_persistence") read in its own snapshot: the pause that
-- pauses_in_force would find for session :pause_session ('' = the tenant-wide one only),
-- the longest-lasting first; when one holds nothing is written (no agent, no row, no job)
-- and the pause is returned. NULL reads no pause.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text,
-- :msg_id text, :content text, :source jsonb, :timestamp_text text,
-- :timestamp_at timestamptz, :metadata jsonb, :project_scope project scope text[],
-- :channel_scope channel scope text[], :embedding vector, :embedding_model text,
-- :queue_job queue an embedding job boolean, :job_error job last_error text (NULL when
-- none), :pause_session session key whose pause to obey text (NULL = none)
WITH pause AS (
    SELECT session_key, expires_at, extract(epoch FROM expires_at - now())::float8 AS remaining
    FROM persistence_pauses
    WHERE :pause_session::text IS NOT NULL AND tenant_id = :tenant_id AND session_key IN ('', :pause_session)
      AND expires_at > now()
    ORDER BY expires_at DESC LIMIT 1
), known_agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), new_agent AS (
    INSERT INTO agents (tenant_id, name)
    SELECT :tenant_id, :agent
    WHERE NOT EXISTS (SELECT 1 FROM known_agent) AND NOT EXISTS (SELECT 1 FROM pause)
    ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name
    RETURNING id
), agent AS (
    SELECT id FROM known_agent UNION ALL SELECT id FROM new_agent
), msg_hit AS (
    SELECT m.id FROM memories m, known_agent a
    WHERE m.tenant_id = :tenant_id AND m.agent_id = a.id AND :msg_id::text <> '' AND m.msg_id = :msg_id
      AND m.msg_id <> '' AND m.project_id = ANY (:project_scope::text[])
    ORDER BY m.id LIMIT 1
), content_hit AS (
    SELECT m.id FROM memories m, known_agent a
    WHERE m.tenant_id = :tenant_id AND m.agent_id = a.id
      AND m.content_hash = decode(md5(:content::text), 'hex') AND m.content = :content
      AND m.project_id = ANY (:project_scope::text[]) AND m.channel = ANY (:channel_scope::text[])
      AND NOT EXISTS (SELECT 1 FROM msg_hit)
    ORDER BY m.id LIMIT 1
), inserted AS (
    INSERT INTO memories (tenant_id, agent_id, project_id, channel, msg_id, content, source,
                          timestamp_text, timestamp_at, metadata, embedding, embedding_model)
    SELECT :tenant_id, agent.id, :project_id, :channel, :msg_id, :content, :source, :timestamp_text, :timestamp_at, :metadata, :embedding, :embedding_model
    FROM agent
    WHERE NOT EXISTS (SELECT 1 FROM msg_hit) AND NOT EXISTS (SELECT 1 FROM content_hit)
      AND NOT EXISTS (SELECT 1 FROM pause)
    ON CONFLICT DO NOTHING
    RETURNING id
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id, last_error, run_after)
    SELECT :tenant_id, 'mem', id, :job_error, clock_timestamp() - interval '1 hour' FROM inserted WHERE :queue_job
    ON CONFLICT (tenant_id, item_kind, item_id) DO UPDATE
    SET attempts = 0, run_after = EXCLUDED.run_after, last_error = EXCLUDED.last_error
    RETURNING 1
)
SELECT (SELECT id FROM msg_hit) AS duplicate_msg_id,
       (SELECT id FROM content_hit) AS duplicate_content,
       (SELECT id FROM inserted) AS inserted_id,
       EXISTS (SELECT 1 FROM queued) AS queued,
       pause.session_key AS pause_session_key, pause.expires_at AS pause_expires_at,
       pause.remaining AS pause_remaining
FROM (SELECT 1) AS one LEFT JOIN pause ON true

-- probe_memory_duplicate --
-- The read-only half of store_memory's dedup probes (same scopes;
-- docs/tools.md, "Dedup scopes"), run before the content is embedded so that a duplicate
-- costs no embedding. store_memory probes again inside its transaction; this answer is only
-- an optimisation. $1 tenant_id uuid, $2 agent name text, $3 msg_id text, $4 content text,
-- $5 project scope text[], $6 channel scope text[]
WITH agent AS (
    SELECT id FROM agents WHERE tenant_id = $1 AND name = $2
), msg_hit AS (
    SELECT m.id FROM memories m, agent
    WHERE m.tenant_id = $1 AND m.agent_id = agent.id AND $3::text <> '' AND m.msg_id = $3
      AND m.msg_id <> '' AND m.project_id = ANY ($5::text[])
    ORDER BY m.id LIMIT 1
), content_hit AS (
    SELECT m.id FROM memories m, agent
    WHERE m.tenant_id = $1 AND m.agent_id = agent.id
      AND m.content_hash = decode(md5($4::text), 'hex') AND m.content = $4
      AND m.project_id = ANY ($5::text[]) AND m.channel = ANY ($6::text[])
      AND NOT EXISTS (SELECT 1 FROM msg_hit)
    ORDER BY m.id LIMIT 1
)
SELECT (SELECT id FROM msg_hit) AS duplicate_msg_id,
       (SELECT id FROM content_hit) AS duplicate_content

-- list_memories --
-- Newest-first listing of every agent's memories in the tenant (spec list_memories with
-- an empty agent), walking the (tenant, created_at) index; project read rule: NULL = all
-- projects, '' = global pool, X = X plus global pool.
-- $1 tenant_id uuid, $2 project_id text (NULL = all), $3 limit int
SELECT m.id, a.name AS agent_id, m.project_id, m.content, m.source, m.timestamp_text,
       m.created_at, m.locked, m.channel
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.project_id = $2 OR m.project_id = '')
ORDER BY m.created_at DESC, m.id DESC
LIMIT $3

-- list_agent_memories --
-- Newest-first listing of one agent's memories, walking the (tenant, agent, created_at)
-- index; same project rule as list_memories.
-- $1 tenant_id uuid, $2 agent name text, $3 project_id text (NULL = all), $4 limit int
SELECT m.id, $2::text AS agent_id, m.project_id, m.content, m.source, m.timestamp_text,
       m.created_at, m.locked, m.channel
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = (SELECT id FROM agents WHERE tenant_id = $1 AND name = $2)
  AND ($3::text IS NULL OR m.project_id = $3 OR m.project_id = '')
ORDER BY m.created_at DESC, m.id DESC
LIMIT $4

-- memory_for_edit --
-- One memory of the tenant with its owner's name, locked for the rest of the
-- transaction so the checks of update/lock/delete stay true until the write.
-- $1 tenant_id uuid, $2 id bigint
SELECT m.id, a.name AS agent_name, m.locked
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
WHERE m.tenant_id = $1 AND m.id = $2
FOR UPDATE OF m

-- update_memory_content --
-- Replace content (the generated hash and tsvector follow) and the embedding: the new
-- content's vector when it was embedded inline, else NULL (the old vector is stale).
-- Locked rows are never changed. Returns the id, or NULL when locked.
-- $1 tenant_id uuid, $2 id bigint, $3 content text, $4 embedding vector (NULL = none),
-- $5 embedding_model text
UPDATE memories
SET content = $3, embedding = $4, embedding_model = $5, updated_at = clock_timestamp()
WHERE tenant_id = $1 AND id = $2 AND NOT locked
RETURNING id

-- set_memory_lock --
-- Lock or unlock one memory (idempotent).
-- $1 tenant_id uuid, $2 id bigint, $3 locked boolean
UPDATE memories SET locked = $3 WHERE tenant_id = $1 AND id = $2
RETURNING id

-- delete_unlocked_memory --
-- Delete one unlocked memory, owned by agent $3 when given (NULL = any owner).
-- $1 tenant_id uuid, $2 id bigint, $3 agent name text
DELETE FROM memories m
USING agents a
WHERE m.tenant_id = $1 AND m.id = $2 AND NOT m.locked
  AND a.tenant_id = m.tenant_id AND a.id = m.agent_id
  AND ($3::text IS NULL OR a.name = $3)
RETURNING m.id

-- delete_agent_memories --
-- Every memory of one agent (all projects and channels, locked ones too).
-- $1 tenant_id uuid, $2 agent_id bigint
WITH gone AS (DELETE FROM memories WHERE tenant_id = $1 AND agent_id = $2 RETURNING 1)
SELECT count(*) FROM gone
