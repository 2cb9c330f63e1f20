"""A memory's own time gets an index: a time cue finds its period without reading the agent.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05

A recall with a time cue (docs/tools.md, "Time cues") reads the memories whose parsed
timestamp (``timestamp_at``) lies in the cue's period. No index covered that column, so
the cue arm read every memory of the agent and filtered: at 10k memories about 30 ms of a
100 ms cued recall (docs/reliability.md, "CPersona 2.6 tier (issue 32)").
``memories_agent_time`` is ``(tenant_id, agent_id, timestamp_at)`` over the memories that
have a timestamp (the others never fall in a period); the tenant leads, as in every key.

Episodes get none: an episode's own time is computed from its free-text ``start_time``
(parsed only when it is an ISO-8601 date or timestamp, else ``created_at``), and those
casts depend on session settings, so no index expression may hold them; an agent's
episodes are few and read through ``episodes_agent_recent``.

Online on a populated database: built ``CONCURRENTLY`` (no write lock), outside a
transaction; an invalid leftover of an interrupted build is dropped and built again.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'memories_agent_time' AND NOT i.indisvalid
"""

INDEX = r"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_agent_time
    ON memories (tenant_id, agent_id, timestamp_at)
    WHERE timestamp_at IS NOT NULL
"""

INDEX_COMMENT = r"""
COMMENT ON INDEX memories_agent_time IS 'A time cue''s period: the agent''s memories whose own time (timestamp_at) lies in it.'
"""

DOWNGRADE = "DROP INDEX IF EXISTS memories_agent_time"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        if bind.execute(text(INVALID_INDEX)).first() is not None:
            bind.execute(text("DROP INDEX CONCURRENTLY memories_agent_time"))
        bind.execute(text(INDEX))
        bind.execute(text(INDEX_COMMENT))


def downgrade() -> None:
    op.execute(DOWNGRADE)
