-- health_deep_anonymous --
-- deep_check anonymous_source: one agent's memories carrying the User sentinel source
-- {type:User, id:'', name:''}, with content (a leading "[name] " may recover the name).
-- $1 tenant_id uuid, $2 agent name text
SELECT m.id, m.content, m.locked
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = agent_id_of($1, $2)
  AND jsonb_typeof(m.source) = 'object' AND m.source ->> 'type' = 'User'
  AND m.source ->> 'id' = '' AND m.source ->> 'name' = ''
ORDER BY m.id

-- health_deep_name_sources --
-- deep_check anonymous_source repair: fill source.name of unlocked sentinel rows.
-- $1 tenant_id uuid, $2 ids bigint[], $3 names text[]
WITH named AS (
    UPDATE memories m
    SET source = jsonb_set(m.source, '{name}', to_jsonb(f.name)), updated_at = clock_timestamp()
    FROM unnest($2::bigint[], $3::text[]) AS f (id, name)
    WHERE m.tenant_id = $1 AND m.id = f.id AND NOT m.locked
      AND jsonb_typeof(m.source) = 'object' AND m.source ->> 'type' = 'User'
      AND m.source ->> 'id' = '' AND m.source ->> 'name' = ''
    RETURNING m.id
)
SELECT count(*) FROM named

-- health_deep_short --
-- deep_check short_content: one agent's memories at most $3 characters long once
-- surrounding whitespace is trimmed.
-- $1 tenant_id uuid, $2 agent name text, $3 max length int
SELECT m.id, m.content, m.locked
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = agent_id_of($1, $2)
  AND char_length(regexp_replace(m.content, '^[[:space:]]+|[[:space:]]+$', '', 'g')) <= $3
ORDER BY m.id

-- health_deep_delete_short --
-- deep_check short_content repair: delete the unlocked short memories (same predicate as
-- health_deep_short); a trigger drops their queue jobs. Returns the count.
-- $1 tenant_id uuid, $2 agent name text, $3 max length int
WITH removed AS (
    DELETE FROM memories m
    WHERE m.tenant_id = $1
      AND m.agent_id = agent_id_of($1, $2)
      AND char_length(regexp_replace(m.content, '^[[:space:]]+|[[:space:]]+$', '', 'g')) <= $3
      AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM removed

-- health_deep_stale_profile --
-- deep_check stale_profile: the agent's profile when not updated for $3 days.
-- $1 tenant_id uuid, $2 agent name text, $3 days int
SELECT count(*) AS count, max(p.updated_at) AS last_updated
FROM profiles p
WHERE p.tenant_id = $1
  AND p.agent_id = agent_id_of($1, $2)
  AND p.user_id = '' AND p.updated_at < now() - make_interval(days => $3)

-- health_deep_episode_ranges --
-- deep_check orphaned_episodes: one agent's episodes with both a start and an end time.
-- $1 tenant_id uuid, $2 agent name text
SELECT e.id, e.summary, e.start_time, e.end_time
FROM episodes e
WHERE e.tenant_id = $1
  AND e.agent_id = agent_id_of($1, $2)
  AND coalesce(e.start_time, '') <> '' AND coalesce(e.end_time, '') <> ''
ORDER BY e.id

-- health_deep_orphans --
-- deep_check orphaned_episodes: of the given (parsed) episode time ranges, those that
-- contain no memory timestamp of the agent.
-- $1 tenant_id uuid, $2 agent name text, $3 episode ids bigint[], $4 starts timestamptz[],
-- $5 ends timestamptz[]
SELECT r.id
FROM unnest($3::bigint[], $4::timestamptz[], $5::timestamptz[]) AS r (id, starts, ends)
WHERE NOT EXISTS (
    SELECT 1 FROM memories m
    WHERE m.tenant_id = $1
      AND m.agent_id = agent_id_of($1, $2)
      AND m.timestamp_at BETWEEN r.starts AND r.ends)
ORDER BY r.id

-- health_deep_calibration --
-- deep_check calibration_staleness: the agent's embedded memory count and the calibration
-- that applies to it (its own row, else the tenant-wide one), if any was ever made.
-- $1 tenant_id uuid, $2 agent name text
WITH agent AS (SELECT agent_id_of($1, $2) AS id)
SELECT (SELECT count(*) FROM memories m
        WHERE m.tenant_id = $1 AND m.agent_id = (SELECT id FROM agent)
          AND m.embedding IS NOT NULL) AS embedded,
       c.found IS NOT NULL AS calibrated, c.agent_scope, c.calibrated_at, c.scoring_version
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT true AS found, r.agent_id IS NOT NULL AS agent_scope, r.calibrated_at,
           r.scoring_version
    FROM recall_calibration r
    WHERE r.tenant_id = $1
      AND (r.agent_id = (SELECT id FROM agent) OR r.agent_id IS NULL)
      AND (r.calibrated_at IS NOT NULL OR r.vector_threshold IS NOT NULL)
    ORDER BY r.agent_id NULLS LAST
    LIMIT 1
) AS c ON true

-- health_deep_near_duplicates --
-- deep_check near_duplicate: among the agent's newest $3 embedded memories (of the most
-- common width), pairs with cosine similarity above $4 and different content. Returns
-- the rows scanned, those skipped for another width, the pair count and the top $5
-- pairs as JSON [{id_a, id_b, cosine, preview_a, preview_b}].
-- $1 tenant_id uuid, $2 agent name text, $3 row cap int, $4 threshold float8,
-- $5 sample limit int
WITH newest AS (
    SELECT m.id, m.content, m.embedding, m.embedding_dim
    FROM memories m
    WHERE m.tenant_id = $1
      AND m.agent_id = agent_id_of($1, $2)
      AND m.embedding IS NOT NULL
    ORDER BY m.id DESC
    LIMIT $3
), width AS (
    SELECT mode() WITHIN GROUP (ORDER BY embedding_dim) AS dim FROM newest
), recent AS (
    SELECT * FROM newest WHERE embedding_dim = (SELECT dim FROM width)
), pairs AS (
    SELECT a.id AS id_a, b.id AS id_b, 1 - (a.embedding <=> b.embedding) AS cosine,
           left(a.content, 60) AS preview_a, left(b.content, 60) AS preview_b
    FROM recent a
    JOIN recent b ON a.id < b.id
    WHERE a.content <> b.content AND (a.embedding <=> b.embedding) < 1 - $4::float8
)
SELECT (SELECT count(*) FROM newest) AS rows_scanned,
       (SELECT count(*) FROM newest) - (SELECT count(*) FROM recent) AS other_width,
       (SELECT count(*) FROM pairs) AS pairs,
       coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.cosine DESC, p.id_a, p.id_b)
                 FROM (SELECT * FROM pairs ORDER BY cosine DESC, id_a, id_b LIMIT $5) AS p),
                '[]'::jsonb) AS samples
