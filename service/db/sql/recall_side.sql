-- part: recall_scope --
-- The scope CTEs both halves of a recall share ({part:recall_scope}): the agent, and its
-- memories and episodes in the call's project and channel. Project NULL = all, '' = the
-- global pool, X = X plus it; channel '' = no filter, C = C plus channel-less rows. Shape
-- current (current_only): no record with a successor (OFFSET 0: a probe each, no join).
-- :tenant_id uuid, :agent name text, :project_id text, :channel text
agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), scoped_memories AS NOT MATERIALIZED (
    SELECT m.* FROM memories m
    WHERE m.tenant_id = :tenant_id AND m.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR m.project_id = :project_id OR m.project_id = '') -- shape: project
      AND (:channel::text = '' OR m.channel = :channel OR m.channel = '') -- shape: channel
      AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.tenant_id = :tenant_id AND r.object_kind = 'mem' AND r.object_id = m.id AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' OFFSET 0) -- shape: current
), scoped_episodes AS NOT MATERIALIZED (
    SELECT e.* FROM episodes e
    WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '') -- shape: project
      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '') -- shape: channel
      AND NOT EXISTS (SELECT 1 FROM relations r WHERE r.tenant_id = :tenant_id AND r.object_kind = 'ep' AND r.object_id = e.id AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity' OFFSET 0) -- shape: current
)

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
