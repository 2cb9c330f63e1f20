"""Full-text and trigram indexes keyed by tenant and agent.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30

Recall always searches one agent of one tenant. With btree_gin the GIN indexes
carry (tenant_id, agent_id) in front of the tsvector / trigram keys, so a
scoped search reads only that agent's postings instead of every tenant's, and
the candidate rows of BM25 come from the index. The index names stay those of
0001, so checks and tools that look them up keep working.

Row-level security lets Postgres use an index for a query condition only when
the operator's function is LEAKPROOF (otherwise the condition must wait until
the policy has filtered the rows, i.e. a scan of the agent's rows). Full-text
match (ts_match_vq) and ILIKE (texticlike) raise no error that depends on row
data, so they are marked LEAKPROOF when the migrating role is a superuser (the
embedded database). Elsewhere a NOTICE says so; recall stays correct, only
slower on large agents.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE EXTENSION IF NOT EXISTS btree_gin;
DROP INDEX memories_tsv;
DROP INDEX memories_trgm;
DROP INDEX episodes_tsv;
DROP INDEX episodes_trgm;
CREATE INDEX memories_tsv ON memories USING gin (tenant_id, agent_id, content_tsv);
CREATE INDEX memories_trgm ON memories USING gin (tenant_id, agent_id, content gin_trgm_ops);
CREATE INDEX episodes_tsv ON episodes USING gin (tenant_id, agent_id, search_tsv);
CREATE INDEX episodes_trgm ON episodes
    USING gin (tenant_id, agent_id, (summary || ' ' || keywords) gin_trgm_ops);
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
        ALTER FUNCTION texticlike(text, text) LEAKPROOF;
    ELSE
        RAISE NOTICE 'not a superuser: ts_match_vq and texticlike stay non-leakproof, so '
                     'row-level security keeps full-text search from using its indexes';
    END IF;
END
$$;
COMMENT ON INDEX memories_tsv IS 'Full text of one agent''s memories: (tenant, agent, lexeme) postings.';
COMMENT ON INDEX memories_trgm IS 'Substring (trigram) search in one agent''s memories: identifiers, CJK.';
COMMENT ON INDEX episodes_tsv IS 'Full text of one agent''s episodes (summary and keywords).';
COMMENT ON INDEX episodes_trgm IS 'Substring (trigram) search in one agent''s episodes.';
"""

DOWNGRADE = r"""
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION ts_match_vq(tsvector, tsquery) NOT LEAKPROOF;
        ALTER FUNCTION texticlike(text, text) NOT LEAKPROOF;
    END IF;
END
$$;
DROP INDEX memories_tsv;
DROP INDEX memories_trgm;
DROP INDEX episodes_tsv;
DROP INDEX episodes_trgm;
CREATE INDEX memories_tsv ON memories USING gin (content_tsv);
CREATE INDEX memories_trgm ON memories USING gin (content gin_trgm_ops);
CREATE INDEX episodes_tsv ON episodes USING gin (search_tsv);
CREATE INDEX episodes_trgm ON episodes USING gin ((summary || ' ' || keywords) gin_trgm_ops);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
