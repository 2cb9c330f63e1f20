"""A tool set per API key: ``all`` (every tool, the default) or ``everyday``.

Revision ID: 0013
Revises: 0009
Create Date: 2026-12-01

``cpersona-service key create --tools everyday`` makes a key that lists (tools/list)
and may call (tools/call) only the memory tools an agent uses in a session; the
admin and maintenance tools cost every session's context and are refused to it.
Existing keys keep every tool (the column defaults to ``all``). The names of the
sets are fixed here by a CHECK; which tools a set holds is the code's
(``service/mcp/tools/__init__.py``), so a release can refine a set without a
migration.
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0009"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE api_keys
    ADD COLUMN tool_set text NOT NULL DEFAULT 'all',
    ADD CONSTRAINT api_keys_tool_set_known CHECK (tool_set IN ('all', 'everyday'));
COMMENT ON COLUMN api_keys.tool_set IS 'Which tools the key lists and may call: all (every tool) or everyday (the session memory tools; see docs/tools.md). Set by key create --tools.';
"""

DOWNGRADE = """
ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_tool_set_known;
ALTER TABLE api_keys DROP COLUMN IF EXISTS tool_set;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
