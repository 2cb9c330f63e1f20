"""One definition of the text an episode's vector encodes.

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-01

The embedding queue's statements (claim with texts, the texts of claimed items, the
settle that checks the text did not change) each wrote out "the summary, then a space
and the keywords when there are any". ``episode_text(summary, keywords)`` says it once;
the library's ``queue.inline.episode_text`` is its Python twin (the write path embeds
that text before the row is stored).
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE FUNCTION episode_text(p_summary text, p_keywords text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN p_keywords = '' THEN p_summary
                      ELSE p_summary || ' ' || p_keywords END $$;
COMMENT ON FUNCTION episode_text(text, text) IS
    'The text an episode''s vector encodes: its summary, then its keywords when there are any.';
"""

DOWNGRADE = r"""
DROP FUNCTION episode_text(text, text);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
