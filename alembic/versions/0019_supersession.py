"""Facts that change: at most one successor per record (docs/tools.md, "Facts that change").

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04

Supersession is the declared record-to-record relation ``supersedes`` (subject = the newer
record, object = the older). A record has at most one successor at a time: a partial
unique index on the object end of record-to-record ``supersedes`` relations. Nothing else
is stored: a record's ``valid_from`` is its own time and ``valid_to`` its successor's
``valid_from``, both computed when read.

Online on a populated database: the index is built ``CONCURRENTLY`` (no write lock); an
invalid leftover of an interrupted build is dropped and rebuilt. Relations declared before
this revision may already give one record two successors: the earliest declaration (lowest
id) is kept and the later ones are deleted first, tenant by tenant, which is what declaring
them under this revision would have done (the later one is dropped, "already superseded").
Rerunning the migration is safe; a duplicate a previous release writes during the build
makes it fail, and a rerun removes it and builds again.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

DEDUPLICATE = r"""
DELETE FROM relations r
WHERE r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity'
  AND EXISTS (
    SELECT 1 FROM relations o
    WHERE o.tenant_id = r.tenant_id AND o.predicate = 'supersedes'
      AND o.subject_kind <> 'entity' AND o.object_kind = r.object_kind
      AND o.object_id = r.object_id AND o.id < r.id)
"""

AS_TENANT = "SELECT set_config('app.tenant_id', :tenant, false)"

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'relations_one_successor' AND NOT i.indisvalid
"""

INDEX = r"""
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS relations_one_successor
    ON relations (tenant_id, object_kind, object_id)
    WHERE predicate = 'supersedes' AND subject_kind <> 'entity' AND object_kind <> 'entity'
"""

INDEX_COMMENT = r"""
COMMENT ON INDEX relations_one_successor IS 'Facts that change: a record (mem or ep) is superseded by at most one record at a time; also how a record''s successor is found.'
"""

DOWNGRADE = "DROP INDEX IF EXISTS relations_one_successor"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        if bind.execute(text(INVALID_INDEX)).first() is not None:
            bind.execute(text("DROP INDEX CONCURRENTLY relations_one_successor"))
        for (tenant,) in bind.execute(text("SELECT id FROM tenants ORDER BY id")).all():
            # relations FORCE row-level security: a migration role that is neither
            # superuser nor BYPASSRLS sees a tenant's rows only as that tenant
            bind.execute(text(AS_TENANT), {"tenant": str(tenant)})
            bind.execute(text(DEDUPLICATE))
        bind.execute(text(AS_TENANT), {"tenant": ""})
        bind.execute(text(INDEX))
        bind.execute(text(INDEX_COMMENT))


def downgrade() -> None:
    op.execute(DOWNGRADE)
