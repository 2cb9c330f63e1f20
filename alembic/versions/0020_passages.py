"""Passages: the window-sized parts of long memories and episodes, each with its own
vector (docs/architecture.md, "Passages").

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04

A new table per tenant (``tenant_id`` in every key and foreign key) under row-level
security like the others. A passage names its record as a kind and an id; a stored
generated column per kind carries the foreign key to ``memories`` or ``episodes`` ``ON
DELETE CASCADE``, so deleting a record by any path removes its passages in the same
transaction. Each passage keeps the hash of the text it was cut from: recall serves a
passage only while its record's text still hashes to it, so an edit never serves stale
passages, even before the queue has rebuilt them. ``passages_hash`` on the records says
for which text their passages were last built (NULL: never), which the online backfill
walks.

Online on a populated database: the table is new and empty; the new record columns are
nullable without a default (a catalogue change, no rewrite); the foreign keys take a
brief lock on ``memories`` and ``episodes`` to register, with nothing to validate.
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

UPGRADE = r"""
ALTER TABLE memories ADD COLUMN passages_hash bytea;
ALTER TABLE episodes ADD COLUMN passages_hash bytea;
COMMENT ON COLUMN memories.passages_hash IS 'Hash (content_hash) of the text the passages were last built from; NULL when never divided (the passage backfill walks these).';
COMMENT ON COLUMN episodes.passages_hash IS 'MD5 of episode_text(summary, keywords) the passages were last built from; NULL when never divided.';

CREATE TABLE passages (
    tenant_id       uuid        NOT NULL,
    agent_id        bigint      NOT NULL,
    item_kind       text        NOT NULL CHECK (item_kind IN ('mem', 'ep')),
    item_id         bigint      NOT NULL,
    idx             integer     NOT NULL CHECK (idx >= 0),
    memory_id       bigint GENERATED ALWAYS AS (CASE WHEN item_kind = 'mem' THEN item_id END) STORED,
    episode_id      bigint GENERATED ALWAYS AS (CASE WHEN item_kind = 'ep' THEN item_id END) STORED,
    source_hash     bytea       NOT NULL,
    start_char      integer     NOT NULL CHECK (start_char >= 0),
    end_char        integer     NOT NULL,
    embedding       vector      NOT NULL,
    embedding_model text        NOT NULL,
    embedding_dim   integer GENERATED ALWAYS AS (vector_dims(embedding)) STORED,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, item_kind, item_id, idx),
    CHECK (end_char > start_char),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, episode_id) REFERENCES episodes (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE passages IS 'Window-sized parts of a long memory or episode, each with its own vector; built by the embedding queue, deleted with the record.';
COMMENT ON COLUMN passages.agent_id IS 'The record''s agent (agents.id): the vector channel''s HNSW scan filters on it before joining the records.';
COMMENT ON COLUMN passages.item_kind IS 'The record''s kind: mem (a memory) or ep (an episode).';
COMMENT ON COLUMN passages.item_id IS 'The record''s id (memories.id or episodes.id, by item_kind).';
COMMENT ON COLUMN passages.idx IS 'The passage''s position in its record, from 0.';
COMMENT ON COLUMN passages.memory_id IS 'item_id when item_kind is mem (generated): the key that deletes the passage with its memory.';
COMMENT ON COLUMN passages.episode_id IS 'item_id when item_kind is ep (generated): the key that deletes the passage with its episode.';
COMMENT ON COLUMN passages.source_hash IS 'Hash of the record text the passage was cut from; a passage is served only while the record still hashes to it.';
COMMENT ON COLUMN passages.start_char IS 'First character of the passage in the record''s text (0-based, code points).';
COMMENT ON COLUMN passages.end_char IS 'Character after the passage''s last (exclusive).';
COMMENT ON COLUMN passages.embedding IS 'Unit-length embedding of the passage''s text.';
COMMENT ON COLUMN passages.embedding_model IS 'Model that produced embedding.';
COMMENT ON COLUMN passages.embedding_dim IS 'Width of embedding; selects the matching partial HNSW index.';
CREATE INDEX passages_memory ON passages (tenant_id, memory_id) WHERE memory_id IS NOT NULL;
CREATE INDEX passages_episode ON passages (tenant_id, episode_id) WHERE episode_id IS NOT NULL;
CREATE INDEX passages_embedding_384 ON passages
    USING hnsw ((embedding::vector(384)) vector_ip_ops) WHERE embedding_dim = 384;
CREATE INDEX passages_embedding_1536 ON passages
    USING hnsw ((embedding::vector(1536)) vector_ip_ops) WHERE embedding_dim = 1536;

ALTER TABLE passages ENABLE ROW LEVEL SECURITY;
ALTER TABLE passages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON passages USING (tenant_id = app_current_tenant())
    WITH CHECK (tenant_id = app_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON passages TO cpersona_app;
"""

DOWNGRADE = r"""
DROP TABLE IF EXISTS passages;
ALTER TABLE episodes DROP COLUMN IF EXISTS passages_hash;
ALTER TABLE memories DROP COLUMN IF EXISTS passages_hash;
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute(DOWNGRADE)
