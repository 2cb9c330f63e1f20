-- part: recall_scope --
-- The scope CTEs both halves of a recall share ({part:recall_scope}): the agent, and its
-- memories and episodes in the call's project and channel. Project NULL = all, '' = the
-- global pool, X = X plus it; channel '' = no filter, C = C plus channel-less rows. Shape
-- current (current_only): no record with a successor (OFFSET 0: a probe each, no join).
-- Shape as_of (docs/tools.md, "Facts that change"): no record whose own time is after
-- :as_of, none whose successor's own time is at or before it (a probe each, as current);
-- an episode's start_time is read only where the model's reading of it is certain (part
-- episode_valid_from), else the row is left to the check after ranking.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :as_of timestamptz
agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), scoped_memories AS NOT MATERIALIZED (
    SELECT m.* FROM memories m
    WHERE m.tenant_id = :tenant_id AND m.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR m.project_id = :project_id OR m.project_id = '') -- shape: project
      AND (:channel::text = '' OR m.channel = :channel OR m.channel = '') -- shape: channel
      AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.tenant_id = :tenant_id AND r.object_kind = 'mem' AND r.object_id = m.id AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' OFFSET 0) -- shape: current
      AND coalesce(m.timestamp_at, m.created_at) <= :as_of::timestamptz -- shape: as_of
      AND NOT EXISTS (SELECT 1 FROM relations r -- shape: as_of
                      WHERE r.tenant_id = :tenant_id AND r.object_kind = 'mem' AND r.object_id = m.id -- shape: as_of
                        AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' -- shape: as_of
                        AND {part:successor_from} <= :as_of::timestamptz OFFSET 0) -- shape: as_of
), scoped_episodes AS NOT MATERIALIZED (
    SELECT e.* FROM episodes e
    WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '') -- shape: project
      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '') -- shape: channel
      AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.tenant_id = :tenant_id AND r.object_kind = 'ep' AND r.object_id = e.id AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' OFFSET 0) -- shape: current
      AND coalesce((SELECT {part:episode_valid_from} FROM (SELECT e.start_time, e.created_at) x) <= :as_of::timestamptz, true) -- shape: as_of
      AND NOT EXISTS (SELECT 1 FROM relations r -- shape: as_of
                      WHERE r.tenant_id = :tenant_id AND r.object_kind = 'ep' AND r.object_id = e.id -- shape: as_of
                        AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' -- shape: as_of
                        AND {part:successor_from} <= :as_of::timestamptz OFFSET 0) -- shape: as_of
)

-- part: episode_valid_from --
-- An episode's own time (valid_from; docs/tools.md, "Facts that change") as an expression
-- over ``x`` (start_time, created_at), where Postgres reads start_time as the model does
-- (``service.memory.supersession.valid_from``: Python's ISO 8601, naive = UTC): created_at
-- when there is none; a plain ISO 8601 date, or date and time to the microsecond with an
-- optional Z, +hh, +hhmm or +hh:mm, as written; NULL (not known here) for any other text, which the
-- callers treat as "may hold": the check after ranking judges those rows.
CASE WHEN x.start_time IS NULL THEN x.created_at WHEN x.start_time ~ '^\d{4}-\d{2}-\d{2}([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,6})?)?([Zz]|[+-]\d{2}(:?\d{2})?)?)?$' AND pg_input_is_valid(x.start_time, 'timestamptz') THEN CASE WHEN x.start_time ~ '([Zz]|[+-]\d{2}(:?\d{2})?)$' THEN x.start_time::timestamptz ELSE x.start_time::timestamp AT TIME ZONE 'UTC' END END

-- part: successor_from --
-- The own time of relation ``r``'s subject (the successor of its object), a memory's or
-- an episode's (part episode_valid_from; NULL when not known here, which no comparison
-- holds for, so a record whose successor's time is not known is never left out by it).
coalesce((SELECT coalesce(s.timestamp_at, s.created_at) FROM memories s WHERE s.tenant_id = :tenant_id AND s.id = r.subject_memory), (SELECT {part:episode_valid_from} FROM episodes x WHERE x.tenant_id = :tenant_id AND x.id = r.subject_episode))

-- part: recall_found --
-- The hits of a recall joined to their rows (both halves include {part:recall_found}):
-- a recall row's columns and the two text vectors of the second-stage features. In
-- ``recall_vectors`` every hit is a vector hit, so its ``score`` is its cosine.
found AS (
    SELECT h.channel, h.kind, h.id, h.score, h.position,
           m.content, m.source, m.timestamp_text, m.msg_id, m.created_at,
           NULL::boolean AS resolved,
           m.recall_count, m.last_recalled_at, m.content_tsv AS tsv, m.content_tsv_en AS tsv_en
    FROM hits h JOIN memories m ON m.tenant_id = :tenant_id AND m.id = h.id
    WHERE h.kind = 'mem'
    UNION ALL
    SELECT h.channel, h.kind, h.id, h.score, h.position,
           '[Episode] ' || e.summary, '{"System": "episode"}'::jsonb,
           coalesce(e.start_time, to_char(e.created_at AT TIME ZONE 'UTC',
                                          'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')),
           '', e.created_at, e.resolved,
           0, NULL, e.search_tsv,
           to_tsvector('english'::regconfig, e.summary || ' ' || e.keywords)
    FROM hits h JOIN episodes e ON e.tenant_id = :tenant_id AND e.id = h.id
    WHERE h.kind = 'ep'
)

-- like_fallback --
-- Literal case-insensitive substring match of the whole query, newest first
-- (docs/tools.md, "Retrievers"): used only when full text produced no query or no rows.
-- $1 tenant_id uuid, $2 agent name text, $3 project_id text, $4 channel text,
-- $5 source_id LIKE pattern text, $6 LIKE pattern text, $7 fetch limit int
SELECT m.id, m.content, m.source, m.timestamp_text, m.msg_id, m.created_at
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = (SELECT id FROM agents WHERE tenant_id = $1 AND name = $2)
  AND ($3::text IS NULL OR m.project_id = $3 OR m.project_id = '')
  AND ($4::text = '' OR m.channel = $4 OR m.channel = '')
  AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
  AND m.content ILIKE $6
ORDER BY m.created_at DESC, m.id DESC
LIMIT $7

-- bump_recall_stats --
-- Credit the memories a recall returned (docs/tools.md, "Recall statistics").
-- $1 tenant_id uuid, $2 memory ids bigint[]
UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = now()
WHERE tenant_id = $1 AND id = ANY ($2::bigint[])

-- plan_each_statement --
-- Back to a custom plan per execution for the rest of the transaction, after the
-- recall statement ran with its generic plan (plan_cache_mode is transaction-local).
SELECT set_config('plan_cache_mode', 'force_custom_plan', true)

-- note_advisory --
-- Record the degraded-advisory state of a tenant and whether its long runbook was
-- shown; returns whether the long form had already been shown before this call.
-- $1 tenant_id uuid, $2 state text, $3 long form shown now boolean
WITH before AS (SELECT long_form_sent FROM embedding_health WHERE tenant_id = $1)
INSERT INTO embedding_health (tenant_id, state, long_form_sent, updated_at)
VALUES ($1, $2, $3, now())
ON CONFLICT (tenant_id) DO UPDATE
SET state = EXCLUDED.state,
    long_form_sent = embedding_health.long_form_sent OR EXCLUDED.long_form_sent,
    updated_at = now()
RETURNING coalesce((SELECT long_form_sent FROM before), false) AS already_sent

-- part: walk_counts --
-- How many episodes and passages recall_vectors' agent has, each counted through an index
-- up to :walk_from (0 when that half does not run). An HNSW index holds every agent's rows
-- and filters to the agent's after the walk (pgvector's iterative scan), so for an agent
-- with none or few beside agents with many the walk reads on through theirs, up to
-- hnsw.max_scan_tuples; the statement walks only from :walk_from rows, ranks fewer exactly
-- (about 1 µs a row against about 2 ms a walk) and reads none for an agent without
-- (docs/reliability.md, "Long-record costs: recall beside an agent with many passages").
-- A passage count of 0 also spares the lexical hits' passages and the records' counts.
-- passages_agent's predicate idx >= 0 (every passage's) keeps that index out of the walk.
-- :tenant_id uuid, :vector query vector, :episodes boolean, :passages boolean, :walk_from int
walk_counts AS MATERIALIZED (
    SELECT (SELECT count(*) FROM (
                SELECT 1 FROM episodes c
                WHERE :vector::vector IS NOT NULL AND :episodes AND c.tenant_id = :tenant_id
                  AND c.agent_id = (SELECT id FROM agent)
                ORDER BY c.tenant_id, c.agent_id LIMIT :walk_from::int) c) AS episodes,
           (SELECT count(*) FROM (
                SELECT 1 FROM passages q
                WHERE :vector::vector IS NOT NULL AND :passages AND q.tenant_id = :tenant_id
                  AND q.agent_id = (SELECT id FROM agent) AND q.idx >= 0
                ORDER BY q.tenant_id, q.agent_id LIMIT :walk_from::int) q) AS passages
)
