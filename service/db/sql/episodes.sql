-- insert_episode --
-- Archive one episode (no dedup: every call is a new row), with its unit embedding
-- when it was embedded inline (NULL otherwise: the embedding queue fills it).
-- :tenant_id uuid, :agent_id bigint, :project_id text, :channel text, :summary text,
-- :keywords text, :start_time text, :end_time text, :resolved boolean,
-- :embedding vector, :embedding_model text
INSERT INTO episodes (tenant_id, agent_id, project_id, channel, summary, keywords,
                      start_time, end_time, resolved, embedding, embedding_model)
VALUES (:tenant_id, :agent_id, :project_id, :channel, :summary, :keywords, :start_time, :end_time, :resolved, :embedding, :embedding_model)
RETURNING id

-- list_episodes --
-- Newest-first episodes, agent optional, project read rule (NULL all, '' global, X both).
-- $1 tenant_id uuid, $2 agent name text (NULL = all agents), $3 project_id text, $4 limit
-- int
SELECT e.id, a.name AS agent_id, e.project_id, e.summary, e.keywords, e.start_time,
       e.end_time, e.created_at
FROM episodes e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE e.tenant_id = $1
  AND ($2::text IS NULL OR a.name = $2)
  AND ($3::text IS NULL OR e.project_id = $3 OR e.project_id = '')
ORDER BY e.created_at DESC, e.id DESC
LIMIT $4

-- delete_episode --
-- Delete one episode, owned by agent $3 when given (NULL = any owner).
-- $1 tenant_id uuid, $2 id bigint, $3 agent name text
DELETE FROM episodes e
USING agents a
WHERE e.tenant_id = $1 AND e.id = $2
  AND a.tenant_id = e.tenant_id AND a.id = e.agent_id
  AND ($3::text IS NULL OR a.name = $3)
RETURNING e.id

-- delete_agent_episodes --
-- Every episode of one agent.
-- $1 tenant_id uuid, $2 agent_id bigint
WITH gone AS (DELETE FROM episodes WHERE tenant_id = $1 AND agent_id = $2 RETURNING 1)
SELECT count(*) FROM gone
