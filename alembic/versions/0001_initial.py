"""Schema v1: tenants, API keys, agents, memories, episodes, profiles, RLS.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The application role: queries on tenant data run as this role inside each
-- transaction (SET LOCAL ROLE), so row-level security always applies to them.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cpersona_app') THEN
        CREATE ROLE cpersona_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       AND NOT pg_has_role(current_user, 'cpersona_app', 'MEMBER') THEN
        EXECUTE format('GRANT cpersona_app TO %I', current_user);
    END IF;
END
$$;

CREATE FUNCTION app_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT NULLIF(current_setting('app.tenant_id', true), '')::uuid $$;
COMMENT ON FUNCTION app_current_tenant() IS
    'The tenant of the current transaction (app.tenant_id, set with set_config(..., true)); NULL when unset, which matches no row.';

CREATE TABLE tenants (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    slug        text        NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name        text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE tenants IS 'Unit of isolation and billing. Every tenant-owned row carries tenant_id.';
COMMENT ON COLUMN tenants.slug IS 'Stable operator-facing name used by the CLI (lower-case letters, digits, dashes).';

CREATE TABLE api_keys (
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id     uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    prefix        text        NOT NULL,
    key_hash      bytea       NOT NULL,
    label         text        NOT NULL DEFAULT '',
    grants        jsonb       NOT NULL DEFAULT '{"*": "read-write"}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    expires_at    timestamptz,
    revoked_at    timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT api_keys_prefix_key UNIQUE (prefix),
    CONSTRAINT api_keys_grants_object CHECK (jsonb_typeof(grants) = 'object')
);
COMMENT ON TABLE api_keys IS 'Bearer credentials. The key itself is shown once and never stored; the application role cannot read this table.';
COMMENT ON COLUMN api_keys.prefix IS 'Public lookup id (also the KEY_ID of the CLI); the key is "<prefix>_<secret>". Globally unique so a request can be resolved before its tenant is known.';
COMMENT ON COLUMN api_keys.key_hash IS 'SHA-256 of the whole key, compared in constant time.';
COMMENT ON COLUMN api_keys.grants IS 'Per-agent permissions {"agent": "none"|"read"|"read-write", "*": default}, CPersona ACL semantics.';
COMMENT ON COLUMN api_keys.last_used_at IS 'Updated at most once a minute per key.';

CREATE TABLE agents (
    tenant_id   uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    name        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT agents_tenant_name_key UNIQUE (tenant_id, name)
);
COMMENT ON TABLE agents IS 'The agent_id axis of CPersona: hard isolation inside a tenant. Rows reference agents by (tenant_id, id).';
COMMENT ON COLUMN agents.name IS 'The agent_id string the client uses (may be empty, as in CPersona).';

CREATE SEQUENCE memory_item_ids;
COMMENT ON SEQUENCE memory_item_ids IS 'One id space for memories and episodes: mem:N and ep:N never name rows with the same number.';

CREATE TABLE memories (
    tenant_id         uuid        NOT NULL,
    id                bigint      NOT NULL DEFAULT nextval('memory_item_ids'),
    agent_id          bigint      NOT NULL,
    project_id        text        NOT NULL DEFAULT '',
    channel           text        NOT NULL DEFAULT '',
    msg_id            text        NOT NULL DEFAULT '',
    content           text        NOT NULL,
    content_hash      bytea       GENERATED ALWAYS AS (decode(md5(content), 'hex')) STORED,
    content_tsv       tsvector    GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED,
    source            jsonb       NOT NULL DEFAULT '{}',
    timestamp_text    text        NOT NULL DEFAULT '',
    timestamp_at      timestamptz,
    metadata          jsonb       NOT NULL DEFAULT '{}',
    embedding         vector,
    embedding_model   text,
    recall_count      integer     NOT NULL DEFAULT 0,
    last_recalled_at  timestamptz,
    locked            boolean     NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE memories IS 'Facts stored by agents (CPersona memories). Read scope: agent exact, project bucket plus global pool, channel plus channel-less rows.';
COMMENT ON COLUMN memories.id IS 'From memory_item_ids (shared with episodes); the ref is mem:<id>.';
COMMENT ON COLUMN memories.project_id IS 'Project bucket; empty string is the global pool.';
COMMENT ON COLUMN memories.channel IS 'Channel axis; empty string rows are visible from every channel.';
COMMENT ON COLUMN memories.msg_id IS 'The caller''s message id (message.id), empty when none; dedup key within agent and project.';
COMMENT ON COLUMN memories.content_hash IS 'MD5 of content: keys the exact-bucket unique index (content itself is too long for a btree).';
COMMENT ON COLUMN memories.content_tsv IS 'Language-neutral (simple) full-text vector of content.';
COMMENT ON COLUMN memories.source IS 'Normalised source object {type, id, name}; {} when anonymous.';
COMMENT ON COLUMN memories.timestamp_text IS 'The caller''s timestamp string exactly as given.';
COMMENT ON COLUMN memories.timestamp_at IS 'timestamp_text parsed, when it parses (naive values read as UTC).';
COMMENT ON COLUMN memories.embedding IS 'Unit-length embedding of content; NULL until embedded.';
COMMENT ON COLUMN memories.embedding_model IS 'Model that produced embedding, so a model change is detectable per row.';
COMMENT ON COLUMN memories.recall_count IS 'Times returned by recall with confidence scoring on (recall statistics).';
COMMENT ON COLUMN memories.locked IS 'Locked rows cannot be edited or deleted individually, nor touched by repairs.';

CREATE INDEX memories_agent_recent ON memories (tenant_id, agent_id, created_at DESC, id DESC);
CREATE INDEX memories_isolation ON memories (tenant_id, agent_id, project_id, created_at DESC);
CREATE INDEX memories_tenant_recent ON memories (tenant_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX memories_dedup_content
    ON memories (tenant_id, agent_id, project_id, channel, content_hash);
CREATE UNIQUE INDEX memories_dedup_msg_id
    ON memories (tenant_id, agent_id, project_id, msg_id) WHERE msg_id <> '';
CREATE INDEX memories_content_probe ON memories (tenant_id, agent_id, content_hash);
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);
CREATE INDEX memories_trgm ON memories USING gin (content gin_trgm_ops);
COMMENT ON INDEX memories_dedup_content IS 'Exact-bucket backstop for content dedup (agent, project, channel, content).';
COMMENT ON INDEX memories_dedup_msg_id IS 'Exact-bucket backstop for msg_id dedup (agent, project, msg_id).';

CREATE TABLE episodes (
    tenant_id     uuid        NOT NULL,
    id            bigint      NOT NULL DEFAULT nextval('memory_item_ids'),
    agent_id      bigint      NOT NULL,
    project_id    text        NOT NULL DEFAULT '',
    channel       text        NOT NULL DEFAULT '',
    summary       text        NOT NULL,
    keywords      text        NOT NULL DEFAULT '',
    search_tsv    tsvector    GENERATED ALWAYS AS
                      (to_tsvector('simple'::regconfig, summary || ' ' || keywords)) STORED,
    embedding     vector,
    embedding_model text,
    start_time    text,
    end_time      text,
    resolved      boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE episodes IS 'Session summaries archived by agents; recalled as "[Episode] <summary>". No dedup.';
COMMENT ON COLUMN episodes.id IS 'From memory_item_ids (shared with memories); the ref is ep:<id>.';
COMMENT ON COLUMN episodes.search_tsv IS 'Language-neutral full-text vector of summary and keywords.';
COMMENT ON COLUMN episodes.start_time IS 'Earliest history timestamp (caller string), NULL when none.';
COMMENT ON COLUMN episodes.end_time IS 'Latest history timestamp (caller string), NULL when none.';
COMMENT ON COLUMN episodes.resolved IS 'The session''s issue was resolved (lowers its confidence score).';

CREATE INDEX episodes_agent_recent ON episodes (tenant_id, agent_id, created_at DESC, id DESC);
CREATE INDEX episodes_isolation ON episodes (tenant_id, agent_id, project_id, created_at DESC);
CREATE INDEX episodes_tenant_recent ON episodes (tenant_id, created_at DESC, id DESC);
CREATE INDEX episodes_tsv ON episodes USING gin (search_tsv);
CREATE INDEX episodes_trgm ON episodes USING gin ((summary || ' ' || keywords) gin_trgm_ops);

CREATE TABLE profiles (
    tenant_id   uuid        NOT NULL,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    agent_id    bigint      NOT NULL,
    user_id     text        NOT NULL DEFAULT '',
    project_id  text        NOT NULL DEFAULT '',
    content     text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT profiles_agent_user_key UNIQUE (tenant_id, agent_id, user_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE profiles IS 'One free-text profile per agent (user_id empty), capped at 2,000 characters; global per agent.';

-- Row-level security: the second wall behind every query's own tenant filter.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['agents', 'memories', 'episodes', 'profiles'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_current_tenant()) '
            'WITH CHECK (tenant_id = app_current_tenant())', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO cpersona_app', t);
    END LOOP;
END
$$;
GRANT USAGE ON SEQUENCE memory_item_ids TO cpersona_app;
GRANT USAGE ON SEQUENCE agents_id_seq, profiles_id_seq TO cpersona_app;
GRANT SELECT ON tenants TO cpersona_app;
GRANT EXECUTE ON FUNCTION app_current_tenant() TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS profiles;
DROP TABLE IF EXISTS episodes;
DROP TABLE IF EXISTS memories;
DROP SEQUENCE IF EXISTS memory_item_ids;
DROP TABLE IF EXISTS agents;
DROP TABLE IF EXISTS api_keys;
DROP TABLE IF EXISTS tenants;
DROP FUNCTION IF EXISTS app_current_tenant();
-- The cpersona_app role is cluster-wide and may serve other databases; it is kept.
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
