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
