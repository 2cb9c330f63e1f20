"""Functions and triggers that several statements share.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

Maintenance and calibration statements wrote the same fragments out many times: the
"one agent by name, or every agent" scope, the invalid-source predicate, the grouping
of duplicate contents, and "delete the queue jobs of the rows just deleted". Each is
said once here:

- ``agent_id_of(tenant, name)``: the id of a tenant's agent by name.
- ``invalid_source(source)``: a memory's source is a bare string or an object with keys
  but no canonical type (User, Agent, System); ``{}`` and null are anonymous, not invalid.
- ``content_duplicates(tenant, agent)``: the memories that share their content with
  another of the same agent and project across channels, each with the keeper of its
  group (the channel-less row, else the lowest id).
- Triggers on memories and episodes delete the embedding jobs of deleted rows, so no
  delete can leave a job for a row that is gone.

The functions run with the caller's rights: row-level security applies to what they
read exactly as to the statement around them.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE FUNCTION agent_id_of(p_tenant uuid, p_name text) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT a.id FROM agents a WHERE a.tenant_id = p_tenant AND a.name = p_name $$;
COMMENT ON FUNCTION agent_id_of(uuid, text) IS
    'The id of the agent named p_name in tenant p_tenant (NULL when there is none).';

CREATE FUNCTION invalid_source(p_source jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
        SELECT jsonb_typeof(p_source) = 'string'
            OR (jsonb_typeof(p_source) = 'object' AND p_source <> '{}'::jsonb
                AND (jsonb_typeof(p_source -> 'type') IS DISTINCT FROM 'string'
                     OR p_source ->> 'type' NOT IN ('User', 'Agent', 'System')))
    $$;
COMMENT ON FUNCTION invalid_source(jsonb) IS
    'A source check_health reports as invalid_source_type: a bare string, or an object '
    'with keys but no canonical type (User, Agent, System).';

CREATE FUNCTION content_duplicates(p_tenant uuid, p_agent text)
    RETURNS TABLE (id bigint, keeper bigint, locked boolean)
    LANGUAGE sql STABLE
    AS $$
        WITH scoped AS (
            SELECT m.id, m.agent_id, m.project_id, m.channel, m.content_hash, m.content,
                   m.locked
            FROM memories m
            WHERE m.tenant_id = p_tenant
              AND (p_agent IS NULL OR m.agent_id = agent_id_of(p_tenant, p_agent))
        ), grouped AS (
            SELECT s.id, s.locked, count(*) OVER same AS size,
                   coalesce(min(s.id) FILTER (WHERE s.channel = '') OVER same,
                            min(s.id) OVER same) AS keeper
            FROM scoped s
            WINDOW same AS (PARTITION BY s.agent_id, s.project_id, s.content_hash, s.content)
        )
        SELECT g.id, g.keeper, g.locked FROM grouped g WHERE g.size > 1
    $$;
COMMENT ON FUNCTION content_duplicates(uuid, text) IS
    'Memories (of one agent by name, or all when NULL) whose content another memory of '
    'the same agent and project has, across channels, with the keeper of each group.';

CREATE FUNCTION drop_embedding_jobs() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        DELETE FROM embedding_jobs j
        USING gone g
        WHERE j.tenant_id = g.tenant_id AND j.item_kind = TG_ARGV[0] AND j.item_id = g.id;
        RETURN NULL;
    END
    $$;
COMMENT ON FUNCTION drop_embedding_jobs() IS
    'After a delete of memories or episodes: delete the embedding jobs of those rows.';
CREATE TRIGGER memories_drop_embedding_jobs AFTER DELETE ON memories
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION drop_embedding_jobs('mem');
CREATE TRIGGER episodes_drop_embedding_jobs AFTER DELETE ON episodes
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION drop_embedding_jobs('ep');

GRANT EXECUTE ON FUNCTION agent_id_of(uuid, text), invalid_source(jsonb),
    content_duplicates(uuid, text) TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TRIGGER episodes_drop_embedding_jobs ON episodes;
DROP TRIGGER memories_drop_embedding_jobs ON memories;
DROP FUNCTION drop_embedding_jobs();
DROP FUNCTION content_duplicates(uuid, text);
DROP FUNCTION invalid_source(jsonb);
DROP FUNCTION agent_id_of(uuid, text);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
