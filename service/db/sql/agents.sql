-- agent_id_by_name --
-- The internal id of a tenant's agent; NULL when the agent never wrote.
-- $1 tenant_id uuid, $2 name text
SELECT id FROM agents WHERE tenant_id = $1 AND name = $2

-- insert_agent --
-- Register an agent on its first write; NULL when a concurrent write did it first.
-- $1 tenant_id uuid, $2 name text
INSERT INTO agents (tenant_id, name) VALUES ($1, $2)
ON CONFLICT (tenant_id, name) DO NOTHING
RETURNING id

-- delete_agent --
-- Forget the agent row itself once its data is gone.
-- $1 tenant_id uuid, $2 agent_id bigint
DELETE FROM agents WHERE tenant_id = $1 AND id = $2
