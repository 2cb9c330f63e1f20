"""Schema v2: the operating context of each tenant (CPersona's sidecar, in Postgres).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE TABLE operating_contexts (
    tenant_id   uuid        PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    revision    text        NOT NULL DEFAULT '',
    document    jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT operating_contexts_document_object CHECK (jsonb_typeof(document) = 'object')
);
COMMENT ON TABLE operating_contexts IS 'At most one operating context per tenant (CPersona 2.5.1 sidecar, spec 9.4): served by get_operating_context, its summary sent as MCP instructions at initialize, its registry gating project_id. No row = dormant. Written only by the operator CLI (cpersona-service context set|clear).';
COMMENT ON COLUMN operating_contexts.tenant_id IS 'The tenant this context belongs to (one context per tenant).';
COMMENT ON COLUMN operating_contexts.revision IS 'context_revision of the document, copied out for psql; quoted in gate warnings and refusals as (rev R).';
COMMENT ON COLUMN operating_contexts.document IS 'The validated, normalised TOML as JSON: {version, context_revision, instructions:{summary}, registry:{project_ids, enforce}, defaults:{agent: project_id}, doctrine:[{name, body}]}.';
COMMENT ON COLUMN operating_contexts.updated_at IS 'When the operator last set this context.';

ALTER TABLE operating_contexts ENABLE ROW LEVEL SECURITY;
ALTER TABLE operating_contexts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON operating_contexts
    USING (tenant_id = app_current_tenant())
    WITH CHECK (tenant_id = app_current_tenant());
-- Tools only read it; writes run in admin transactions that set app.tenant_id.
GRANT SELECT ON operating_contexts TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS operating_contexts;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
