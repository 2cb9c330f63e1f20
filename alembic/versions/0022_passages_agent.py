"""An agent's passages get an index of their own: recall counts them before it walks.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05

Recall's vector channel finds an agent's nearest passages through the HNSW index over all
passages (docs/architecture.md, "Passages"). That index holds every agent's passages, and
the walk filters to the recalling agent's afterwards (pgvector's iterative scan): an agent
with no passages, or few among many of others, makes it walk on through other agents'
passages until ``hnsw.max_scan_tuples``. Measured on 10k memories with 7,996 passages of
one agent: a recall's vector statement for a 1k-memory agent without passages beside it
took 28 ms instead of 5
(docs/reliability.md, "Long-record costs: recall beside an agent with many passages").

``passages_agent`` is ``(tenant_id, agent_id)`` over all passages: recall counts the
agent's passages through it (up to a bound) and walks the HNSW index only when the agent
has enough of them; fewer are ranked exactly, read through this index. Its predicate,
``idx >= 0``, holds for every passage (a CHECK constraint says so) and is there for the
planner: only a statement that states it may use the index, so the walk, which does not,
is never offered a read of the agent's passages sorted by distance in its place (chosen on
a 100k test corpus; about 1 µs a passage, where the walk exists for agents with many).
The tenant leads, as in every key.

Online on a populated database: built ``CONCURRENTLY`` (no write lock), outside a
transaction; an invalid leftover of an interrupted build is dropped and built again.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'passages_agent' AND NOT i.indisvalid
"""

INDEX = r"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS passages_agent ON passages (tenant_id, agent_id)
    WHERE idx >= 0
"""

INDEX_COMMENT = r"""
COMMENT ON INDEX passages_agent IS 'Recall''s count of an agent''s passages, and their exact ranking when they are few.'
"""

DOWNGRADE = "DROP INDEX IF EXISTS passages_agent"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        if bind.execute(text(INVALID_INDEX)).first() is not None:
            bind.execute(text("DROP INDEX CONCURRENTLY passages_agent"))
        bind.execute(text(INDEX))
        bind.execute(text(INDEX_COMMENT))


def downgrade() -> None:
    op.execute(DOWNGRADE)
