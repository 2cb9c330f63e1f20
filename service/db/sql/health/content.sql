-- health_pattern_memories --
-- check_health content hygiene: memories of the tenant (one agent when $2 is set) whose
-- content matches a regular expression (annotation echoes, Discord mentions).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 pattern text
SELECT m.id, m.content, m.locked
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND m.content ~ $3
ORDER BY m.id

-- health_oversized_memories --
-- check_health oversized_content: memories longer than the content cap (code points).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 max length int
SELECT m.id, m.content, m.locked
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND char_length(m.content) > $3
ORDER BY m.id

-- health_rewrite_memories --
-- Rewrite the content of unlocked memories (a repair). A row whose new content is empty,
-- or already exists in its exact bucket (agent, project, channel), or equals another
-- rewritten row's new content, is not rewritten: it has become a duplicate (the unique
-- index must hold), and it is returned as surplus for health_delete_surplus, with the
-- row that stays (the bucket's existing copy, else the lowest rewritten id; NULL for an
-- emptied row, or when that row is surplus too). Rewritten rows lose their stale
-- embedding and are queued for a new one when $4. Locked rows are never touched.
-- $1 tenant_id uuid, $2 ids bigint[], $3 new contents text[], $4 queue re-embedding boolean
WITH target AS MATERIALIZED (
    SELECT m.id, m.agent_id, m.project_id, m.channel, t.content AS new_content
    FROM unnest($2::bigint[], $3::text[]) AS t (id, content)
    JOIN memories m ON m.tenant_id = $1 AND m.id = t.id
    WHERE NOT m.locked
), ranked AS MATERIALIZED (
    SELECT t.id, t.new_content,
           t.new_content = ''
           OR first_value(t.id) OVER same_text <> t.id
           OR existing.id IS NOT NULL AS drop_row,
           CASE WHEN t.new_content <> '' THEN coalesce(existing.id, first_value(t.id) OVER same_text)
           END AS keeper
    FROM target t
    LEFT JOIN LATERAL (
        SELECT min(o.id) AS id
        FROM memories o
        WHERE o.tenant_id = $1 AND o.agent_id = t.agent_id
          AND o.project_id = t.project_id AND o.channel = t.channel
          AND o.content_hash = decode(md5(t.new_content), 'hex') AND o.id <> t.id
    ) existing ON existing.id IS NOT NULL
    WINDOW same_text AS (PARTITION BY t.agent_id, t.project_id, t.channel, t.new_content
                         ORDER BY t.id)
), rewritten AS (
    UPDATE memories m
    SET content = r.new_content, embedding = NULL, embedding_model = NULL,
        updated_at = clock_timestamp()
    FROM ranked r
    WHERE m.tenant_id = $1 AND m.id = r.id AND NOT r.drop_row AND NOT m.locked
    RETURNING m.id
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, 'mem', id FROM rewritten WHERE $4
    ON CONFLICT (tenant_id, item_kind, item_id) DO UPDATE
    SET attempts = 0, run_after = clock_timestamp(), last_error = NULL
)
SELECT (SELECT count(*) FROM rewritten) AS rewritten,
       coalesce(array_agg(r.id ORDER BY r.id), '{}') AS surplus,
       coalesce(array_agg(CASE WHEN NOT EXISTS (SELECT 1 FROM ranked k WHERE k.id = r.keeper AND k.drop_row)
                               THEN r.keeper END ORDER BY r.id), '{}') AS keepers
FROM ranked r
WHERE r.drop_row

-- health_duplicate_content --
-- check_health duplicate_content: groups of memories with the same content in the same
-- agent and project across channels, the surplus rows, and how many of those the repair
-- may delete (unlocked, not the keeper: the channel-less row, else the lowest id).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(DISTINCT d.keeper) AS groups,
       count(*) FILTER (WHERE d.id <> d.keeper) AS total_extra,
       count(*) FILTER (WHERE d.id <> d.keeper AND NOT d.locked) AS repairable
FROM content_duplicates($1, $2) d

-- health_duplicate_surplus --
-- Repair of duplicate_content: the unlocked surplus rows of each group and the row each
-- group keeps (the grouping and keepers of health_duplicate_content), for
-- health_delete_surplus.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') AS surplus,
       coalesce(array_agg(d.keeper ORDER BY d.id), '{}') AS keepers
FROM content_duplicates($1, $2) d
JOIN memories m ON m.tenant_id = $1 AND m.id = d.id
WHERE d.id <> d.keeper AND NOT m.locked

-- health_delete_surplus --
-- Delete unlocked memories a repair found surplus (duplicates of a row that stays); a
-- trigger drops their queue jobs. Their declarations are carried to the row that stays
-- first (docs/tools.md, "declare_associations"): each mention, and each relation naming
-- a surplus row as subject, object or anchor, is declared again on it (a repeat of one it
-- already has is absorbed); the originals go with the deleted rows. A NULL keeper carries
-- nothing.
-- $1 tenant_id uuid, $2 surplus ids bigint[], $3 keeper ids bigint[] (same order)
WITH surplus AS MATERIALIZED (
    SELECT t.id, t.keeper
    FROM unnest($2::bigint[], $3::bigint[]) AS t (id, keeper)
    JOIN memories m ON m.tenant_id = $1 AND m.id = t.id
    WHERE NOT m.locked
), carried_mentions AS (
    INSERT INTO entity_mentions (tenant_id, entity_id, ref_kind, ref_id, declared_by, created_at)
    SELECT $1, x.entity_id, 'mem', s.keeper, x.declared_by, x.created_at
    FROM entity_mentions x JOIN surplus s ON x.memory_id = s.id
    WHERE x.tenant_id = $1 AND s.keeper IS NOT NULL
    ON CONFLICT DO NOTHING
), carried_relations AS (
    INSERT INTO relations (tenant_id, agent_id, project_id, channel, subject_kind, subject_id,
                           predicate, object_kind, object_id, anchor_kind, anchor_id,
                           declared_by, declared_at)
    SELECT $1, r.agent_id, r.project_id, r.channel,
           r.subject_kind, coalesce((SELECT s.keeper FROM surplus s WHERE s.id = r.subject_memory), r.subject_id),
           r.predicate,
           r.object_kind, coalesce((SELECT s.keeper FROM surplus s WHERE s.id = r.object_memory), r.object_id),
           r.anchor_kind, coalesce((SELECT s.keeper FROM surplus s WHERE s.id = r.anchor_memory), r.anchor_id),
           r.declared_by, r.declared_at
    FROM relations r
    WHERE r.tenant_id = $1
      AND (r.subject_memory IN (SELECT id FROM surplus WHERE keeper IS NOT NULL)
           OR r.object_memory IN (SELECT id FROM surplus WHERE keeper IS NOT NULL)
           OR r.anchor_memory IN (SELECT id FROM surplus WHERE keeper IS NOT NULL))
    ON CONFLICT DO NOTHING
), removed AS (
    DELETE FROM memories m
    USING surplus s
    WHERE m.tenant_id = $1 AND m.id = s.id
    RETURNING m.id
)
SELECT count(*) FROM removed

-- health_empty_content --
-- check_health empty_content: memories whose content is only whitespace, and how many of
-- them are unlocked (the repair deletes those).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(*) AS count, count(*) FILTER (WHERE NOT m.locked) AS repairable
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND m.content ~ '^[[:space:]]*$'

-- health_delete_empty --
-- Repair of empty_content: delete the unlocked whitespace-only memories (a trigger drops
-- their queue jobs).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH removed AS (
    DELETE FROM memories m
    WHERE m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND m.content ~ '^[[:space:]]*$' AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM removed

-- health_oversized_profiles --
-- check_health oversized_profile: profiles longer than the profile cap and the longest.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 max length int
SELECT count(*) AS count, max(char_length(p.content)) AS max_len
FROM profiles p
WHERE p.tenant_id = $1
  AND ($2::text IS NULL OR p.agent_id = agent_id_of($1, $2))
  AND char_length(p.content) > $3

-- health_cut_profiles --
-- Repair of oversized_profile: cut profiles to the cap (profiles have no lock).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 max length int
WITH cut AS (
    UPDATE profiles p
    SET content = left(p.content, $3), updated_at = clock_timestamp()
    WHERE p.tenant_id = $1
      AND ($2::text IS NULL OR p.agent_id = agent_id_of($1, $2))
      AND char_length(p.content) > $3
    RETURNING p.id
)
SELECT count(*) FROM cut

-- health_missing_profiles --
-- check_health missing_profile: agents of the tenant with memories but no profile.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT a.name
FROM agents a
WHERE a.tenant_id = $1 AND ($2::text IS NULL OR a.name = $2)
  AND EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = $1 AND m.agent_id = a.id)
  AND NOT EXISTS (
        SELECT 1 FROM profiles p
        WHERE p.tenant_id = $1 AND p.agent_id = a.id AND p.user_id = '')
ORDER BY a.name

-- health_stats --
-- The stats block of check_health: row counts of the tenant (one agent when $2 is set),
-- its embedding queue jobs, and the approximate bytes its rows occupy.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH agent AS (SELECT agent_id_of($1, $2) AS id), mem AS (
    SELECT count(*) AS n, coalesce(sum(pg_column_size(m.*)), 0) AS bytes
    FROM memories m
    WHERE m.tenant_id = $1 AND ($2::text IS NULL OR m.agent_id = (SELECT id FROM agent))
), ep AS (
    SELECT count(*) AS n, coalesce(sum(pg_column_size(e.*)), 0) AS bytes
    FROM episodes e
    WHERE e.tenant_id = $1 AND ($2::text IS NULL OR e.agent_id = (SELECT id FROM agent))
), prof AS (
    SELECT count(*) AS n, coalesce(sum(pg_column_size(p.*)), 0) AS bytes
    FROM profiles p
    WHERE p.tenant_id = $1 AND ($2::text IS NULL OR p.agent_id = (SELECT id FROM agent))
), jobs AS (
    SELECT count(*) AS n
    FROM embedding_jobs j
    WHERE j.tenant_id = $1
      AND ($2::text IS NULL
           OR (j.item_kind = 'mem' AND j.item_id IN (
                   SELECT id FROM memories
                   WHERE tenant_id = $1 AND agent_id = (SELECT id FROM agent)))
           OR (j.item_kind = 'ep' AND j.item_id IN (
                   SELECT id FROM episodes
                   WHERE tenant_id = $1 AND agent_id = (SELECT id FROM agent))))
)
SELECT mem.n AS memories, ep.n AS episodes, prof.n AS profiles, jobs.n AS pending_tasks,
       mem.bytes + ep.bytes + prof.bytes AS approx_bytes
FROM mem, ep, prof, jobs

-- health_axis_values --
-- Every project_id and channel value of the tenant's memories (one agent when $2 is
-- set) with its row count: the stats axes and the axis_hygiene check.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH scoped AS (
    SELECT m.project_id, m.channel
    FROM memories m
    WHERE m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
)
SELECT 'project_id' AS axis, project_id AS value, count(*) AS count
FROM scoped GROUP BY project_id
UNION ALL
SELECT 'channel', channel, count(*) FROM scoped GROUP BY channel
ORDER BY axis, count DESC, value
