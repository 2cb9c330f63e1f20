-- profile_content --
-- The agent's profile text (user_id ''), NULL when it has none.
-- $1 tenant_id uuid, $2 agent name text
SELECT p.content
FROM profiles p
JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
WHERE p.tenant_id = $1 AND a.name = $2 AND p.user_id = ''

-- upsert_profile --
-- Replace the agent's profile (one row per agent and user_id '').
-- $1 tenant_id uuid, $2 agent_id bigint, $3 content text
INSERT INTO profiles (tenant_id, agent_id, user_id, content)
VALUES ($1, $2, '', $3)
ON CONFLICT (tenant_id, agent_id, user_id)
DO UPDATE SET content = EXCLUDED.content, updated_at = clock_timestamp()

-- delete_agent_profiles --
-- Every profile of one agent.
-- $1 tenant_id uuid, $2 agent_id bigint
WITH gone AS (DELETE FROM profiles WHERE tenant_id = $1 AND agent_id = $2 RETURNING 1)
SELECT count(*) FROM gone
