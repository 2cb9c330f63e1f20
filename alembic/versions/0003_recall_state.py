"""Embeddings, queue, calibration, pauses, advisory state and usage counters.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Everything CPersona keeps in process memory or sidecar files lives here, per
tenant, so every replica answers the same (architecture §8).
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE memories ADD COLUMN embedding_dim integer
    GENERATED ALWAYS AS (vector_dims(embedding)) STORED;
ALTER TABLE episodes ADD COLUMN embedding_dim integer
    GENERATED ALWAYS AS (vector_dims(embedding)) STORED;
COMMENT ON COLUMN memories.embedding_dim IS 'Width of embedding (NULL when none); selects the matching partial HNSW index.';
COMMENT ON COLUMN episodes.embedding_dim IS 'Width of embedding (NULL when none); selects the matching partial HNSW index.';

-- Approximate nearest-neighbour indexes, one per supported width (inner product on
-- unit vectors). A query names the same cast and predicate to use one.
CREATE INDEX memories_embedding_384 ON memories
    USING hnsw ((embedding::vector(384)) vector_ip_ops) WHERE embedding_dim = 384;
CREATE INDEX memories_embedding_1536 ON memories
    USING hnsw ((embedding::vector(1536)) vector_ip_ops) WHERE embedding_dim = 1536;
CREATE INDEX episodes_embedding_384 ON episodes
    USING hnsw ((embedding::vector(384)) vector_ip_ops) WHERE embedding_dim = 384;
CREATE INDEX episodes_embedding_1536 ON episodes
    USING hnsw ((embedding::vector(1536)) vector_ip_ops) WHERE embedding_dim = 1536;
CREATE INDEX memories_unembedded ON memories (tenant_id, id) WHERE embedding IS NULL;
CREATE INDEX episodes_unembedded ON episodes (tenant_id, id) WHERE embedding IS NULL;

CREATE TABLE embedding_settings (
    id          boolean     PRIMARY KEY DEFAULT true CHECK (id),
    model       text        NOT NULL,
    dimension   integer     NOT NULL CHECK (dimension > 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE embedding_settings IS 'The deployment''s embedding model and width (one row). A start with another model is a model change: rows are re-embedded through the queue.';

CREATE TABLE embedding_jobs (
    tenant_id   uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    item_kind   text        NOT NULL CHECK (item_kind IN ('mem', 'ep')),
    item_id     bigint      NOT NULL,
    attempts    integer     NOT NULL DEFAULT 0,
    run_after   timestamptz NOT NULL DEFAULT now(),
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT embedding_jobs_item_key UNIQUE (tenant_id, item_kind, item_id)
);
CREATE INDEX embedding_jobs_due ON embedding_jobs (run_after, id);
COMMENT ON TABLE embedding_jobs IS 'Durable queue of rows waiting for an embedding; drained with FOR UPDATE SKIP LOCKED by any number of workers.';
COMMENT ON COLUMN embedding_jobs.item_kind IS 'mem (memories.id) or ep (episodes.id).';
COMMENT ON COLUMN embedding_jobs.attempts IS 'Failed attempts so far; jobs at the retry limit stay for inspection and are not retried.';
COMMENT ON COLUMN embedding_jobs.run_after IS 'Not claimed before this time (retry backoff).';

CREATE TABLE recall_calibration (
    tenant_id          uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    agent_id           bigint,
    vector_threshold   double precision,
    fused_gate         double precision,
    fused_gate_signal  text,
    beta               double precision,
    precision_label    text,
    embedding_model    text,
    embedding_dim      integer,
    scoring_version    text,
    details            jsonb       NOT NULL DEFAULT '{}',
    calibrated_at      timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT recall_calibration_scope UNIQUE NULLS NOT DISTINCT (tenant_id, agent_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE recall_calibration IS 'Recall quality state per tenant (agent_id NULL) and per agent: vector threshold, fused gate, precision beta.';
COMMENT ON COLUMN recall_calibration.vector_threshold IS 'Calibrated minimum cosine for vector hits (NULL: CPERSONA_VECTOR_MIN_SIMILARITY).';
COMMENT ON COLUMN recall_calibration.fused_gate IS 'Calibrated gate on the fused score, valid for fused_gate_signal only.';
COMMENT ON COLUMN recall_calibration.beta IS 'Precision override (strict 2.0, balanced 1.0, lenient 0.5, or custom); NULL = default.';
COMMENT ON COLUMN recall_calibration.details IS 'The last calibration report (distribution, admit rates, draws).';

CREATE TABLE persistence_pauses (
    tenant_id    uuid        NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    session_key  text        NOT NULL DEFAULT '',
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text        NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, session_key)
);
COMMENT ON TABLE persistence_pauses IS 'Write pauses (no-persist mode) of a tenant (session_key empty) or of one session inside it; expired rows mean nothing.';
COMMENT ON COLUMN persistence_pauses.created_by IS 'KEY_ID of the key that paused.';

CREATE TABLE embedding_health (
    tenant_id             uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    state                 text        NOT NULL DEFAULT 'unknown'
                                      CHECK (state IN ('unknown', 'healthy', 'hint', 'fault')),
    long_form_sent        boolean     NOT NULL DEFAULT false,
    consecutive_failures  integer     NOT NULL DEFAULT 0,
    updated_at            timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE embedding_health IS 'Degraded-advisory state machine per tenant (spec 3.10): whether the long runbook was already shown.';

CREATE TABLE usage_daily (
    tenant_id       uuid   NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    day             date   NOT NULL,
    tool            text   NOT NULL,
    calls           bigint NOT NULL DEFAULT 0,
    failures        bigint NOT NULL DEFAULT 0,
    bytes_out       bigint NOT NULL DEFAULT 0,
    chars_returned  bigint NOT NULL DEFAULT 0,
    chars_saved     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, tool)
);
COMMENT ON TABLE usage_daily IS 'Tool calls per tenant and UTC day: response bytes, content characters returned and saved by previews.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['embedding_jobs', 'recall_calibration', 'persistence_pauses',
                             'embedding_health', 'usage_daily'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_current_tenant()) '
            'WITH CHECK (tenant_id = app_current_tenant())', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO cpersona_app', t);
    END LOOP;
END
$$;
-- embedding_jobs is drained across tenants by the worker (as the owner role), so only it
-- is not FORCEd; the application role is confined by the policies on every table.
ALTER TABLE recall_calibration FORCE ROW LEVEL SECURITY;
ALTER TABLE persistence_pauses FORCE ROW LEVEL SECURITY;
ALTER TABLE embedding_health FORCE ROW LEVEL SECURITY;
ALTER TABLE usage_daily FORCE ROW LEVEL SECURITY;
GRANT SELECT ON embedding_settings TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS usage_daily;
DROP TABLE IF EXISTS embedding_health;
DROP TABLE IF EXISTS persistence_pauses;
DROP TABLE IF EXISTS recall_calibration;
DROP TABLE IF EXISTS embedding_jobs;
DROP TABLE IF EXISTS embedding_settings;
DROP INDEX IF EXISTS episodes_unembedded;
DROP INDEX IF EXISTS memories_unembedded;
DROP INDEX IF EXISTS episodes_embedding_1536;
DROP INDEX IF EXISTS episodes_embedding_384;
DROP INDEX IF EXISTS memories_embedding_1536;
DROP INDEX IF EXISTS memories_embedding_384;
ALTER TABLE episodes DROP COLUMN IF EXISTS embedding_dim;
ALTER TABLE memories DROP COLUMN IF EXISTS embedding_dim;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
