-- health_invalid_json --
-- check_health invalid_json: memories whose metadata is not a JSON object, or whose
-- source is neither an object, a string nor null (source strings are invalid_source_type's
-- and null is anonymous_source's); repairable = unlocked rows with either problem.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(*) FILTER (WHERE jsonb_typeof(m.source) NOT IN ('object', 'string', 'null'))
           AS bad_source,
       count(*) FILTER (WHERE jsonb_typeof(m.metadata) <> 'object') AS bad_metadata,
       count(*) FILTER (WHERE NOT m.locked) AS repairable
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND (jsonb_typeof(m.source) NOT IN ('object', 'string', 'null')
       OR jsonb_typeof(m.metadata) <> 'object')

-- health_reset_invalid_json --
-- Repair of invalid_json: reset the offending column(s) of unlocked rows to {}.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH reset AS (
    UPDATE memories m
    SET source = CASE WHEN jsonb_typeof(m.source) NOT IN ('object', 'string', 'null')
                      THEN '{}'::jsonb ELSE m.source END,
        metadata = CASE WHEN jsonb_typeof(m.metadata) <> 'object'
                        THEN '{}'::jsonb ELSE m.metadata END,
        updated_at = clock_timestamp()
    WHERE m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND (jsonb_typeof(m.source) NOT IN ('object', 'string', 'null')
           OR jsonb_typeof(m.metadata) <> 'object')
      AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM reset

-- health_unparsed_timestamps --
-- check_health invalid_timestamp: memories with a caller timestamp that was never parsed.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT m.id, m.timestamp_text, m.locked
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND m.timestamp_text <> '' AND m.timestamp_at IS NULL
ORDER BY m.id

-- health_repair_timestamps --
-- Repair of invalid_timestamp on unlocked rows: a parseable text gets its parsed time
-- ($3, $4 given); an unparseable one is replaced by created_at in canonical UTC ISO form
-- (text and time NULL). Returns the rows written.
-- $1 tenant_id uuid, $2 ids bigint[], $3 texts text[] (NULL = use created_at),
-- $4 parsed times timestamptz[] (NULL = use created_at)
WITH fixed AS (
    UPDATE memories m
    SET timestamp_text = coalesce(
            f.text,
            to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
            || CASE WHEN date_trunc('second', m.created_at) = m.created_at THEN ''
                    ELSE to_char(m.created_at AT TIME ZONE 'UTC', '.US') END
            || '+00:00'),
        timestamp_at = coalesce(f.at, m.created_at),
        updated_at = clock_timestamp()
    FROM unnest($2::bigint[], $3::text[], $4::timestamptz[]) AS f (id, text, at)
    WHERE m.tenant_id = $1 AND m.id = f.id AND NOT m.locked
      AND m.timestamp_text <> '' AND m.timestamp_at IS NULL
    RETURNING m.id
)
SELECT count(*) FROM fixed

-- health_timestamp_formats --
-- check_health timestamp_format_drift: parsed caller timestamps by convention (UTC
-- offset or Z, another offset, no offset). Aware non-UTC ones on unlocked rows are
-- what the repair rewrites.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH classified AS (
    SELECT m.locked,
           CASE WHEN m.timestamp_text ~ '[T ][0-9]{2}:[0-9]{2}.*([Zz]|[+-]00(:?00)?)$' THEN 'utc'
                WHEN m.timestamp_text ~ '[T ][0-9]{2}:[0-9]{2}.*[+-][0-9]{2}(:?[0-9]{2})?$'
                    THEN 'aware'
                ELSE 'naive' END AS form
    FROM memories m
    WHERE m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND m.timestamp_text <> '' AND m.timestamp_at IS NOT NULL
)
SELECT count(*) FILTER (WHERE form = 'utc') AS utc,
       count(*) FILTER (WHERE form = 'aware') AS aware,
       count(*) FILTER (WHERE form = 'naive') AS naive,
       count(*) FILTER (WHERE form = 'aware' AND NOT locked) AS repairable,
       count(*) FILTER (WHERE form = 'aware' AND locked) AS locked_aware
FROM classified

-- health_normalise_timestamps --
-- Repair of timestamp_format_drift: rewrite aware non-UTC caller timestamps of unlocked
-- rows as the same instant in UTC (lossless); naive ones stay (their zone is unknown).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH normalised AS (
    UPDATE memories m
    SET timestamp_text =
            to_char(m.timestamp_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
            || CASE WHEN date_trunc('second', m.timestamp_at) = m.timestamp_at THEN ''
                    ELSE to_char(m.timestamp_at AT TIME ZONE 'UTC', '.US') END
            || '+00:00',
        updated_at = clock_timestamp()
    WHERE m.tenant_id = $1
      AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
      AND m.timestamp_text <> '' AND m.timestamp_at IS NOT NULL AND NOT m.locked
      AND m.timestamp_text !~ '[T ][0-9]{2}:[0-9]{2}.*([Zz]|[+-]00(:?00)?)$'
      AND m.timestamp_text ~ '[T ][0-9]{2}:[0-9]{2}.*[+-][0-9]{2}(:?[0-9]{2})?$'
    RETURNING m.id
)
SELECT count(*) FROM normalised

-- health_episode_times --
-- check_health episode_timestamp_format_drift: episodes with a start or end time.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT e.id, e.start_time, e.end_time
FROM episodes e
WHERE e.tenant_id = $1
  AND ($2::text IS NULL OR e.agent_id = agent_id_of($1, $2))
  AND (coalesce(e.start_time, '') <> '' OR coalesce(e.end_time, '') <> '')
ORDER BY e.id

-- health_set_episode_times --
-- Repair of episode_timestamp_format_drift: new start/end time strings (NULL = keep).
-- $1 tenant_id uuid, $2 ids bigint[], $3 start times text[], $4 end times text[]
WITH changed AS (
    UPDATE episodes e
    SET start_time = coalesce(f.start_time, e.start_time),
        end_time = coalesce(f.end_time, e.end_time)
    FROM unnest($2::bigint[], $3::text[], $4::text[]) AS f (id, start_time, end_time)
    WHERE e.tenant_id = $1 AND e.id = f.id
    RETURNING e.id
)
SELECT count(*) FROM changed

-- health_missing_start_times --
-- check_health missing_episode_start_time: episodes without a start time.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(*)
FROM episodes e
WHERE e.tenant_id = $1
  AND ($2::text IS NULL OR e.agent_id = agent_id_of($1, $2))
  AND coalesce(e.start_time, '') = ''

-- health_fill_start_times --
-- Repair of missing_episode_start_time: copy created_at (canonical UTC ISO form) into
-- start_time: when the episode was recorded, an approximation of when it began.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
WITH filled AS (
    UPDATE episodes e
    SET start_time =
            to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
            || CASE WHEN date_trunc('second', e.created_at) = e.created_at THEN ''
                    ELSE to_char(e.created_at AT TIME ZONE 'UTC', '.US') END
            || '+00:00'
    WHERE e.tenant_id = $1
      AND ($2::text IS NULL OR e.agent_id = agent_id_of($1, $2))
      AND coalesce(e.start_time, '') = ''
    RETURNING e.id
)
SELECT count(*) FROM filled

-- health_invalid_sources --
-- check_health invalid_source_type: memories whose source is a bare string or an object
-- with keys but no canonical type (User, Agent, System); {} and null are anonymous.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(*) AS count, count(*) FILTER (WHERE m.locked) AS locked
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND invalid_source(m.source)

-- health_invalid_source_rows --
-- The unlocked rows of health_invalid_sources (same predicate), oldest first, capped.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 limit int
SELECT m.id, m.source
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
  AND invalid_source(m.source)
  AND NOT m.locked
ORDER BY m.id
LIMIT $3

-- health_set_sources --
-- Repair of invalid_source_type: write canonical sources onto unlocked rows.
-- $1 tenant_id uuid, $2 ids bigint[], $3 sources as JSON text[]
WITH written AS (
    UPDATE memories m
    SET source = f.source::jsonb, updated_at = clock_timestamp()
    FROM unnest($2::bigint[], $3::text[]) AS f (id, source)
    WHERE m.tenant_id = $1 AND m.id = f.id AND NOT m.locked
    RETURNING m.id
)
SELECT count(*) FROM written

-- health_anonymous_sources --
-- check_health anonymous_source: memories without producer attribution: the User
-- sentinel {type:User, id:'', name:''}, and {} or null (store's omitted source).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent)
SELECT count(*) FILTER (WHERE jsonb_typeof(m.source) = 'object'
                          AND m.source ->> 'type' = 'User' AND m.source ->> 'id' = ''
                          AND m.source ->> 'name' = '') AS sentinel,
       count(*) FILTER (WHERE m.source = '{}'::jsonb OR jsonb_typeof(m.source) = 'null')
           AS unattributed
FROM memories m
WHERE m.tenant_id = $1
  AND ($2::text IS NULL OR m.agent_id = agent_id_of($1, $2))
