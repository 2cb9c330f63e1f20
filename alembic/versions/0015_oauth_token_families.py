"""OAuth token families: rotated refresh tokens and redeemed codes are kept, so a replay
can be detected and revoke every token issued from the same grant.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

A redeemed code starts a *family* (``family_id``); the tokens it yields and every pair
rotated from them carry it. A refresh token exchanged once is no longer deleted: its
row stays, with ``kind = 'rotated'`` and ``rotated_at``, until it would have expired. A
redeemed code stays too (``used_at``, and its ``expires_at`` moved to the redemption, so
the code of the previous release, which would take it again, sees it expired). When a
rotated refresh token or a used code is presented again, the whole family is revoked
(OAuth 2.1 section 4.3.1; RFC 9700 section 4.14.2).

Online and compatible with the previous release: the columns are nullable without a
default (a catalogue change only, under a short ``lock_timeout``); rows issued before
have no family and get one on their next use; the previous release filters on
``kind IN ('access', 'refresh')``, so it never takes a rotated row for a live one. The
``kind`` check is widened ``NOT VALID`` and then validated (no write lock held while
the rows are read). The family index is built ``CONCURRENTLY``.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

CATALOGUE = r"""
SET LOCAL lock_timeout = '5s';
ALTER TABLE oauth_tokens ADD COLUMN IF NOT EXISTS family_id uuid;
ALTER TABLE oauth_tokens ADD COLUMN IF NOT EXISTS rotated_at timestamptz;
ALTER TABLE oauth_codes ADD COLUMN IF NOT EXISTS family_id uuid;
ALTER TABLE oauth_codes ADD COLUMN IF NOT EXISTS used_at timestamptz;
ALTER TABLE oauth_tokens DROP CONSTRAINT oauth_tokens_kind;
ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_kind
    CHECK (kind IN ('access', 'refresh', 'rotated')) NOT VALID;
COMMENT ON COLUMN oauth_tokens.family_id IS 'The grant the token belongs to: every token issued from one authorization code and rotated from it. A replay revokes the family. NULL: issued before 0015 (joins a family on its next rotation).';
COMMENT ON COLUMN oauth_tokens.rotated_at IS 'When a refresh token was exchanged (kind rotated); the row is kept to detect its reuse.';
COMMENT ON COLUMN oauth_tokens.kind IS 'access (sent as Bearer to /mcp), refresh (exchanged once at /token for a new pair) or rotated (a refresh token already exchanged: presenting it again revokes its family).';
COMMENT ON COLUMN oauth_codes.family_id IS 'The family of the tokens the code was redeemed for (set at redemption); a replay of the code revokes it.';
COMMENT ON COLUMN oauth_codes.used_at IS 'When the code was redeemed (NULL: not yet); the row is kept to detect its replay.';
"""

VALIDATE = "ALTER TABLE oauth_tokens VALIDATE CONSTRAINT oauth_tokens_kind"

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'oauth_tokens_family' AND NOT i.indisvalid
"""

INDEX = r"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth_tokens_family
    ON oauth_tokens (tenant_id, family_id) WHERE family_id IS NOT NULL
"""

INDEX_COMMENT = r"""
COMMENT ON INDEX oauth_tokens_family IS 'The tokens of one family, revoked together on a replay.'
"""

DOWNGRADE = r"""
DELETE FROM oauth_tokens WHERE kind = 'rotated';
DELETE FROM oauth_codes WHERE used_at IS NOT NULL;
DROP INDEX IF EXISTS oauth_tokens_family;
ALTER TABLE oauth_tokens DROP CONSTRAINT oauth_tokens_kind;
ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_kind CHECK (kind IN ('access', 'refresh'));
ALTER TABLE oauth_codes DROP COLUMN IF EXISTS used_at;
ALTER TABLE oauth_codes DROP COLUMN IF EXISTS family_id;
ALTER TABLE oauth_tokens DROP COLUMN IF EXISTS rotated_at;
ALTER TABLE oauth_tokens DROP COLUMN IF EXISTS family_id;
COMMENT ON COLUMN oauth_tokens.kind IS 'access (sent as Bearer to /mcp) or refresh (exchanged once at /token for a new pair).';
"""


def upgrade() -> None:
    op.execute(CATALOGUE)
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        bind.execute(text(VALIDATE))
        if bind.execute(text(INVALID_INDEX)).first() is not None:
            bind.execute(text("DROP INDEX CONCURRENTLY oauth_tokens_family"))
        bind.execute(text(INDEX))
        bind.execute(text(INDEX_COMMENT))


def downgrade() -> None:
    op.execute(DOWNGRADE)
