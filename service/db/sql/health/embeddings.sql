-- health_recorded_dimension --
-- The embedding width the deployment recorded (embedding_settings); NULL before the
-- first start with embeddings on.
SELECT (SELECT dimension FROM embedding_settings WHERE id) AS dimension

-- health_embedding_coverage --
-- check_health null_embedding / null_episode_embedding: rows of one kind ('mem' or
-- 'ep'), rows without an embedding, and those of them with no queue job yet.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 kind text ('mem'|'ep')
WITH agent AS (SELECT agent_id_of($1, $2) AS id), items AS (
    SELECT m.id, m.embedding IS NULL AS missing FROM memories m
    WHERE $3 = 'mem' AND m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = (SELECT id FROM agent))
    UNION ALL
    SELECT e.id, e.embedding IS NULL FROM episodes e
    WHERE $3 = 'ep' AND e.tenant_id = $1
      AND ($2::text IS NULL OR e.agent_id = (SELECT id FROM agent))
)
SELECT count(*) AS total,
       count(*) FILTER (WHERE missing) AS missing,
       count(*) FILTER (WHERE missing AND NOT EXISTS (
           SELECT 1 FROM embedding_jobs j
           WHERE j.tenant_id = $1 AND j.item_kind = $3 AND j.item_id = items.id)) AS unqueued
FROM items

-- health_enqueue_unembedded --
-- Repair of null_embedding / null_episode_embedding: queue every row of one kind that
-- has no embedding and no job yet (existing jobs are left as they are). Returns the count.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 kind text ('mem'|'ep')
WITH agent AS (SELECT agent_id_of($1, $2) AS id), items AS (
    SELECT m.id FROM memories m
    WHERE $3 = 'mem' AND m.tenant_id = $1 AND m.embedding IS NULL
      AND ($2::text IS NULL OR m.agent_id = (SELECT id FROM agent))
    UNION ALL
    SELECT e.id FROM episodes e
    WHERE $3 = 'ep' AND e.tenant_id = $1 AND e.embedding IS NULL
      AND ($2::text IS NULL OR e.agent_id = (SELECT id FROM agent))
), added AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, $3, id FROM items
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM added

-- health_dimension_mismatch --
-- check_health embedding_dimension: embedded memories and episodes whose width is not
-- the configured one (invisible to vector recall), and how many the repair may clear
-- (locked memories are left alone; episodes have no lock).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 expected width int
WITH agent AS (SELECT agent_id_of($1, $2) AS id), mem AS (
    SELECT count(*) AS n, count(*) FILTER (WHERE NOT m.locked) AS writable
    FROM memories m
    WHERE m.tenant_id = $1 AND m.embedding_dim <> $3
      AND ($2::text IS NULL OR m.agent_id = (SELECT id FROM agent))
), ep AS (
    SELECT count(*) AS n
    FROM episodes e
    WHERE e.tenant_id = $1 AND e.embedding_dim <> $3
      AND ($2::text IS NULL OR e.agent_id = (SELECT id FROM agent))
)
SELECT mem.n AS memories, ep.n AS episodes, mem.writable + ep.n AS repairable
FROM mem, ep

-- health_clear_wrong_dimension --
-- Repair of embedding_dimension: drop wrong-width vectors (unlocked memories, episodes)
-- and, when $4, queue the rows for a new embedding. Returns the rows cleared.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 expected width int,
-- $4 queue re-embedding boolean
WITH agent AS (SELECT agent_id_of($1, $2) AS id), mem AS (
    UPDATE memories m SET embedding = NULL, embedding_model = NULL
    WHERE m.tenant_id = $1 AND m.embedding_dim <> $3 AND NOT m.locked
      AND ($2::text IS NULL OR m.agent_id = (SELECT id FROM agent))
    RETURNING 'mem' AS kind, m.id
), ep AS (
    UPDATE episodes e SET embedding = NULL, embedding_model = NULL
    WHERE e.tenant_id = $1 AND e.embedding_dim <> $3
      AND ($2::text IS NULL OR e.agent_id = (SELECT id FROM agent))
    RETURNING 'ep' AS kind, e.id
), cleared AS (
    SELECT kind, id FROM mem UNION ALL SELECT kind, id FROM ep
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, kind, id FROM cleared WHERE $4
    ON CONFLICT (tenant_id, item_kind, item_id) DO UPDATE
    SET attempts = 0, run_after = clock_timestamp(), last_error = NULL
)
SELECT count(*) FROM cleared

-- health_stale_jobs --
-- check_health stale_pending_tasks: queue jobs older than an hour or at the retry limit;
-- of those, the dead ones (retry limit) and the orphans (row gone or already embedded).
-- With an agent, only jobs of that agent's rows (orphans have no agent any more).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 max attempts int
WITH agent AS (SELECT agent_id_of($1, $2) AS id), jobs AS (
    SELECT j.attempts,
           (m.id IS NULL AND e.id IS NULL) OR m.embedding IS NOT NULL
               OR e.embedding IS NOT NULL AS orphan,
           coalesce(m.agent_id, e.agent_id) AS agent_id
    FROM embedding_jobs j
    LEFT JOIN memories m ON j.item_kind = 'mem' AND m.tenant_id = j.tenant_id AND m.id = j.item_id
    LEFT JOIN episodes e ON j.item_kind = 'ep' AND e.tenant_id = j.tenant_id AND e.id = j.item_id
    WHERE j.tenant_id = $1
      AND (j.created_at < now() - interval '1 hour' OR j.attempts >= $3)
)
SELECT count(*) AS count,
       count(*) FILTER (WHERE attempts >= $3) AS dead,
       count(*) FILTER (WHERE orphan) AS orphaned
FROM jobs
WHERE $2::text IS NULL OR agent_id = (SELECT id FROM agent)

-- health_settle_stale_jobs --
-- Repair of stale_pending_tasks: delete stale jobs whose row is gone or embedded (and
-- every stale job when no provider can embed, $4 false); re-arm the others as fresh
-- jobs (due now, no attempts, enqueued now). Same selection as health_stale_jobs.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 max attempts int,
-- $4 a provider is configured boolean
WITH agent AS (SELECT agent_id_of($1, $2) AS id), stale AS (
    SELECT j.id,
           (m.id IS NULL AND e.id IS NULL) OR m.embedding IS NOT NULL
               OR e.embedding IS NOT NULL OR NOT $4 AS drop_job
    FROM embedding_jobs j
    LEFT JOIN memories m ON j.item_kind = 'mem' AND m.tenant_id = j.tenant_id AND m.id = j.item_id
    LEFT JOIN episodes e ON j.item_kind = 'ep' AND e.tenant_id = j.tenant_id AND e.id = j.item_id
    WHERE j.tenant_id = $1
      AND (j.created_at < now() - interval '1 hour' OR j.attempts >= $3)
      AND ($2::text IS NULL OR coalesce(m.agent_id, e.agent_id) = (SELECT id FROM agent))
), dropped AS (
    DELETE FROM embedding_jobs j USING stale s
    WHERE j.tenant_id = $1 AND j.id = s.id AND s.drop_job
    RETURNING j.id
), rearmed AS (
    UPDATE embedding_jobs j
    SET attempts = 0, run_after = clock_timestamp(), last_error = NULL, created_at = now()
    FROM stale s
    WHERE j.tenant_id = $1 AND j.id = s.id AND NOT s.drop_job
    RETURNING j.id
)
SELECT (SELECT count(*) FROM dropped) AS deleted, (SELECT count(*) FROM rearmed) AS rearmed

-- health_ann_index_widths --
-- The embedding widths that have an approximate-nearest-neighbour (HNSW) index on
-- memories: vector recall of any other width scans rows one by one.
SELECT DISTINCT substring(indexdef FROM 'embedding_dim = ([0-9]+)')::int AS width
FROM pg_indexes
WHERE schemaname = current_schema() AND tablename = 'memories'
  AND indexdef ILIKE '%USING hnsw%'
  AND substring(indexdef FROM 'embedding_dim = ([0-9]+)') IS NOT NULL
ORDER BY width

-- part: missing_passages --
-- Embedded rows longer than :fits characters whose passages were never built for their
-- current text (docs/architecture.md, "Passages"), of one tenant and optionally one agent.
stale AS (
    SELECT 'mem' AS kind, m.id FROM memories m
    WHERE m.tenant_id = :tenant_id AND m.embedding IS NOT NULL
      AND char_length(m.content) > :fits AND m.passages_hash IS DISTINCT FROM m.content_hash
      AND (:agent::text IS NULL OR m.agent_id = (SELECT id FROM agent))
    UNION ALL
    SELECT 'ep', e.id FROM episodes e
    WHERE e.tenant_id = :tenant_id AND e.embedding IS NOT NULL
      AND char_length(episode_text(e.summary, e.keywords)) > :fits
      AND e.passages_hash IS DISTINCT FROM decode(md5(episode_text(e.summary, e.keywords)), 'hex')
      AND (:agent::text IS NULL OR e.agent_id = (SELECT id FROM agent))
), unqueued AS (
    SELECT s.kind, s.id FROM stale s
    WHERE NOT EXISTS (SELECT 1 FROM embedding_jobs j WHERE j.tenant_id = :tenant_id
                      AND j.item_kind = s.kind AND j.item_id = s.id)
)

-- health_missing_passages --
-- check_health missing_passages: long embedded rows without passages for their text, and
-- those of them with no queue job.
-- :tenant_id uuid, :agent name text (NULL = every agent), :fits most characters of a text
-- that fits one window int
WITH agent AS (SELECT agent_id_of(:tenant_id, :agent) AS id), {part:missing_passages}
SELECT (SELECT count(*) FROM stale) AS missing, (SELECT count(*) FROM unqueued) AS unqueued

-- health_enqueue_passages --
-- Repair of missing_passages: queue those rows (their job builds the passages). Returns
-- the count.
-- :tenant_id uuid, :agent name text (NULL = every agent), :fits most characters of a text
-- that fits one window int
WITH agent AS (SELECT agent_id_of(:tenant_id, :agent) AS id), {part:missing_passages},
added AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT :tenant_id, kind, id FROM unqueued
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM added
