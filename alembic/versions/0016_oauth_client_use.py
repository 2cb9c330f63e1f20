"""When a registered OAuth client was first issued a token: unused clients expire.

Revision ID: 0016
Revises: 0014
Create Date: 2026-12-04

``/register`` takes no credential, so registrations a stranger makes (or a connector
abandons before its person approves it) would stay for ever. ``used_at`` is set the
first time a token is issued to the client; the serving processes delete clients that
still have none ``CPERSONA_OAUTH_UNUSED_CLIENT_HOURS`` after they registered
(docs/reliability.md, "The edge (hardening round two)"). ``created_at`` gets an index
for the overall registrations-per-hour cap, which counts the last hour's rows.

Online on a populated database: the column is added without a default (a catalogue
change only); clients registered before this revision are marked used (their history
is unknown, and deleting a connector people rely on is worse than keeping junk), in
batches of their own transactions, so an interrupted run resumes; both indexes are
built ``CONCURRENTLY`` (no write lock), an invalid leftover of an interrupted build
dropped and built again.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

BATCH = 5000

COLUMN = r"""
ALTER TABLE oauth_clients ADD COLUMN IF NOT EXISTS used_at timestamptz;
COMMENT ON COLUMN oauth_clients.used_at IS 'When a token was first issued to the client; NULL = never, and such a client is deleted CPERSONA_OAUTH_UNUSED_CLIENT_HOURS after it registered.';
"""

BACKFILL = r"""
UPDATE oauth_clients SET used_at = created_at
WHERE client_id IN (
    SELECT client_id FROM oauth_clients
    WHERE used_at IS NULL AND created_at < :started
    LIMIT :batch
)
"""

STARTED = "SELECT now()"

INDEXES = {
    "oauth_clients_created": (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth_clients_created "
        "ON oauth_clients (created_at)",
        "COMMENT ON INDEX oauth_clients_created IS 'Counts the last hour''s registrations "
        "(the overall cap of /register).'",
    ),
    "oauth_clients_unused": (
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth_clients_unused "
        "ON oauth_clients (created_at) WHERE used_at IS NULL",
        "COMMENT ON INDEX oauth_clients_unused IS 'Finds clients never issued a token, "
        "oldest first, for deletion.'",
    ),
}

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = :name AND NOT i.indisvalid
"""

DOWNGRADE = r"""
DROP INDEX IF EXISTS oauth_clients_unused;
DROP INDEX IF EXISTS oauth_clients_created;
ALTER TABLE oauth_clients DROP COLUMN IF EXISTS used_at;
"""


def upgrade() -> None:
    op.execute(COLUMN)
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        started = bind.execute(text(STARTED)).scalar_one()
        while bind.execute(text(BACKFILL), {"batch": BATCH, "started": started}).rowcount:
            pass
        for name, (create, comment) in INDEXES.items():
            if bind.execute(text(INVALID_INDEX), {"name": name}).first() is not None:
                bind.execute(text(f"DROP INDEX CONCURRENTLY {name}"))
            bind.execute(text(create))
            bind.execute(text(comment))


def downgrade() -> None:
    op.execute(DOWNGRADE)
