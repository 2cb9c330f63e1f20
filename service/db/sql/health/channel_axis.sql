-- health_discord_survey --
-- migrate_channel_axis: the tenant's memories on channel 'discord' (one agent when $2 is
-- set). Recoverable rows have a metadata.session_id string starting with a digit and
-- holding a ':'; their channel is the text before the first ':'. Returns the totals, the
-- first $3 ids whose metadata is not a JSON object, the recoverable rows per recovered
-- channel and the first $4 recoverable rows as JSON.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 id limit int,
-- $4 sample limit int
WITH discord AS (
    SELECT m.id, m.locked, jsonb_typeof(m.metadata) = 'object' AS object_metadata,
           CASE WHEN jsonb_typeof(m.metadata) = 'object'
                 AND jsonb_typeof(m.metadata -> 'session_id') = 'string'
                THEN m.metadata ->> 'session_id' END AS session_id
    FROM memories m
    WHERE m.tenant_id = $1 AND m.channel = 'discord'
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
), classified AS (
    SELECT d.*,
           CASE WHEN d.session_id ~ '^[0-9].*:' THEN split_part(d.session_id, ':', 1) END
               AS recovered
    FROM discord d
)
SELECT count(*) AS total,
       count(recovered) AS recoverable,
       count(*) FILTER (WHERE recovered IS NOT NULL AND locked) AS recoverable_locked,
       count(*) FILTER (WHERE recovered IS NULL AND locked) AS unrecoverable_locked,
       count(*) FILTER (WHERE NOT object_metadata) AS invalid_metadata,
       coalesce((SELECT array_agg(x.id ORDER BY x.id)
                 FROM (SELECT id FROM classified WHERE NOT object_metadata
                       ORDER BY id LIMIT $3) AS x), '{}'::bigint[]) AS invalid_ids,
       coalesce((SELECT jsonb_agg(jsonb_build_object('channel', g.recovered, 'count', g.n)
                                  ORDER BY g.n DESC, g.recovered)
                 FROM (SELECT recovered, count(*) AS n FROM classified
                       WHERE recovered IS NOT NULL GROUP BY recovered) AS g),
                '[]'::jsonb) AS by_channel,
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', s.id, 'recovered_channel',
                                                     s.recovered, 'session_id', s.session_id)
                                  ORDER BY s.id)
                 FROM (SELECT id, recovered, session_id FROM classified
                       WHERE recovered IS NOT NULL ORDER BY id LIMIT $4) AS s),
                '[]'::jsonb) AS samples
FROM classified

-- health_rechannel_discord --
-- migrate_channel_axis: move recoverable unlocked 'discord' rows to their recovered
-- channel, skipping (ignore-on-unique-conflict) a row whose content already exists in
-- the target bucket or that another moved row of the same content takes first.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH movable AS (
    SELECT m.id, m.agent_id, m.project_id, m.content_hash,
           split_part(m.metadata ->> 'session_id', ':', 1) AS target
    FROM memories m
    WHERE m.tenant_id = $1 AND m.channel = 'discord' AND NOT m.locked
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND jsonb_typeof(m.metadata) = 'object'
      AND jsonb_typeof(m.metadata -> 'session_id') = 'string'
      AND m.metadata ->> 'session_id' ~ '^[0-9].*:'
), free AS (
    SELECT v.id, v.target FROM (
        SELECT mv.*, row_number() OVER (PARTITION BY mv.agent_id, mv.project_id, mv.target,
                                                     mv.content_hash ORDER BY mv.id) AS rank
        FROM movable mv) AS v
    WHERE v.rank = 1 AND NOT EXISTS (
        SELECT 1 FROM memories o
        WHERE o.tenant_id = $1 AND o.agent_id = v.agent_id AND o.project_id = v.project_id
          AND o.channel = v.target AND o.content_hash = v.content_hash)
), moved AS (
    UPDATE memories m SET channel = f.target, updated_at = clock_timestamp()
    FROM free f
    WHERE m.tenant_id = $1 AND m.id = f.id AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM moved

-- health_globalize_discord --
-- migrate_channel_axis globalize_unrecoverable: move unrecoverable unlocked 'discord'
-- rows to the channel-less pool (''), ignore-on-unique-conflict like the re-channelling.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH movable AS (
    SELECT m.id, m.agent_id, m.project_id, m.content_hash
    FROM memories m
    WHERE m.tenant_id = $1 AND m.channel = 'discord' AND NOT m.locked
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND NOT coalesce(jsonb_typeof(m.metadata) = 'object'
                       AND jsonb_typeof(m.metadata -> 'session_id') = 'string'
                       AND m.metadata ->> 'session_id' ~ '^[0-9].*:', false)
), free AS (
    SELECT v.id FROM (
        SELECT mv.*, row_number() OVER (PARTITION BY mv.agent_id, mv.project_id,
                                                     mv.content_hash ORDER BY mv.id) AS rank
        FROM movable mv) AS v
    WHERE v.rank = 1 AND NOT EXISTS (
        SELECT 1 FROM memories o
        WHERE o.tenant_id = $1 AND o.agent_id = v.agent_id AND o.project_id = v.project_id
          AND o.channel = '' AND o.content_hash = v.content_hash)
), moved AS (
    UPDATE memories m SET channel = '', updated_at = clock_timestamp()
    FROM free f
    WHERE m.tenant_id = $1 AND m.id = f.id AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM moved
