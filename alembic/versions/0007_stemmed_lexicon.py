"""A stemmed English full-text vector and per-agent lexical statistics kept on write.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

Recall's lexical channel matched exact word forms only (``simple``): "prefers" never met
"prefer". ``memories.content_tsv_en`` holds ``to_tsvector('english', content)`` (Snowball
stems, English stop words removed, positions kept for the phrase feature) beside
``content_tsv``; the ``simple`` vector and the trigram index stay, so identifiers, names,
CJK and other languages keep matching exactly.

BM25 needs document frequencies and lengths. They were estimated per query from a
2,000-row sample (about 8 ms of every recall at 100k rows). They are now kept per agent
and configuration in ``lexicon_terms``, current on every write:

* Each insert, delete or content edit of a memory appends its vectors to
  ``lexicon_changes`` with a sign (+1 / -1), from statement-level triggers (a bulk
  delete or a COPY is one aggregated change per row, one trigger call). Appending takes
  no lock that another writer waits for, so concurrent stores and a long import into the
  same agent never block or deadlock each other on hot counters.
* When an agent's backlog reaches 64 changes the writing transaction folds it into
  ``lexicon_terms`` (``lexicon_fold``), under a *try* advisory lock per agent: a folder
  never waits, and only one transaction folds an agent at a time.
* A reader adds the backlog to the folded counts for its query terms (a few dozen rows),
  so the statistics are exact at the reader's snapshot, on a replica too.

Online on a populated table:

* ``ADD COLUMN`` without a default and the triggers only touch the catalogue (a short
  ACCESS EXCLUSIVE lock, bounded by ``lock_timeout`` so the migration fails fast instead of
  queueing behind a long transaction). A ``GENERATED ... STORED`` column was rejected:
  adding one rewrites the whole table under that lock.
* Existing rows are backfilled in batches of ``BATCH`` rows in id order, each batch its
  own transaction (row locks on that batch only), so an interrupted migration resumes
  where it stopped (``WHERE content_tsv_en IS NULL``).
* The GIN index is built ``CONCURRENTLY`` (no write lock); an invalid leftover of an
  interrupted build is dropped and rebuilt.
* Then every agent's statistics are rebuilt from its rows (``lexicon_rebuild``, one
  transaction per agent, idempotent), which also makes counts exact for rows written
  while the migration ran.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import Connection, text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BATCH = 5000

CATALOGUE = r"""
SET LOCAL lock_timeout = '5s';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS content_tsv_en tsvector;
COMMENT ON COLUMN memories.content_tsv_en IS
    'English (Snowball-stemmed) full-text vector of content, kept by trigger memories_tsv_en.';

CREATE OR REPLACE FUNCTION memories_tsv_en() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        NEW.content_tsv_en := to_tsvector('english'::regconfig, NEW.content);
        RETURN NEW;
    END
    $$;
COMMENT ON FUNCTION memories_tsv_en() IS
    'Before an insert or a content edit of a memory: its English full-text vector.';
DROP TRIGGER IF EXISTS memories_tsv_en ON memories;
CREATE TRIGGER memories_tsv_en BEFORE INSERT OR UPDATE OF content ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_tsv_en();

CREATE TABLE IF NOT EXISTS lexicon_terms (
    tenant_id  uuid      NOT NULL,
    agent_id   bigint    NOT NULL,
    config     regconfig NOT NULL,
    term       text      NOT NULL,
    df         bigint    NOT NULL,
    len        bigint    NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, agent_id, config, term),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE lexicon_terms IS
    'BM25 statistics per agent and text-search configuration, folded from lexicon_changes: '
    'df = memories holding term; the row with term '''' holds the agent''s memory count (df) '
    'and the sum of their vector lengths (len). Add the backlog in lexicon_changes to read '
    'current values.';
COMMENT ON COLUMN lexicon_terms.agent_id IS 'The agent whose memories are counted.';
COMMENT ON COLUMN lexicon_terms.config IS 'simple (content_tsv) or english (content_tsv_en).';
COMMENT ON COLUMN lexicon_terms.term IS 'A lexeme of that configuration; '''' for the agent totals.';
COMMENT ON COLUMN lexicon_terms.df IS 'Memories holding the term (for '''': the memories counted).';
COMMENT ON COLUMN lexicon_terms.len IS 'Sum of the counted memories'' vector lengths ('''' row only).';

CREATE TABLE IF NOT EXISTS lexicon_changes (
    tenant_id  uuid      NOT NULL,
    agent_id   bigint    NOT NULL,
    sign       smallint  NOT NULL CHECK (sign IN (-1, 1)),
    simple     tsvector  NOT NULL,
    english    tsvector,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE lexicon_changes IS
    'Memories written or deleted since their agent''s statistics were last folded: their '
    'vectors and +1 (insert) or -1 (delete). Append-only between folds (no shared counter '
    'is locked by a write).';
COMMENT ON COLUMN lexicon_changes.agent_id IS 'The agent of the memory that changed.';
COMMENT ON COLUMN lexicon_changes.sign IS '+1: the memory was added, -1: removed (an edit is both).';
COMMENT ON COLUMN lexicon_changes.simple IS 'The memory''s simple vector (content_tsv).';
COMMENT ON COLUMN lexicon_changes.english IS
    'The English vector; NULL for a row that had none yet (not counted in english).';
CREATE INDEX IF NOT EXISTS lexicon_changes_agent ON lexicon_changes (tenant_id, agent_id);
COMMENT ON INDEX lexicon_changes_agent IS 'One agent''s backlog, for readers and the fold.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['lexicon_terms', 'lexicon_changes'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I USING (tenant_id = app_current_tenant()) '
            'WITH CHECK (tenant_id = app_current_tenant())', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO cpersona_app', t);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION lexicon_lock_key(p_agent bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT hashtextextended('cpersona.lexicon', p_agent) $$;
COMMENT ON FUNCTION lexicon_lock_key(bigint) IS
    'The advisory-lock key under which one agent''s lexical statistics are folded or rebuilt.';

CREATE OR REPLACE FUNCTION lexicon_fold(p_tenant uuid, p_agent bigint) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
    BEGIN
        IF NOT pg_try_advisory_xact_lock(lexicon_lock_key(p_agent)) THEN
            RETURN false;
        END IF;
        WITH moved AS (
            DELETE FROM lexicon_changes c
            WHERE c.tenant_id = p_tenant AND c.agent_id = p_agent
            RETURNING c.sign, c.simple, c.english
        ), counted AS (
            SELECT 'simple'::regconfig AS config, l.lexeme AS term,
                   sum(m.sign)::bigint AS df, 0::bigint AS len
            FROM moved m CROSS JOIN LATERAL unnest(m.simple) l
            GROUP BY l.lexeme
            UNION ALL
            SELECT 'english'::regconfig, l.lexeme, sum(m.sign)::bigint, 0::bigint
            FROM moved m CROSS JOIN LATERAL unnest(m.english) l
            GROUP BY l.lexeme
            UNION ALL
            SELECT 'simple'::regconfig, '', sum(m.sign)::bigint,
                   sum(m.sign * length(m.simple))::bigint
            FROM moved m HAVING count(*) > 0
            UNION ALL
            SELECT 'english'::regconfig, '', sum(m.sign)::bigint,
                   sum(m.sign * length(m.english))::bigint
            FROM moved m WHERE m.english IS NOT NULL HAVING count(*) > 0
        )
        INSERT INTO lexicon_terms AS t (tenant_id, agent_id, config, term, df, len)
        SELECT p_tenant, p_agent, c.config, c.term, c.df, c.len
        FROM counted c
        ORDER BY c.config, c.term
        ON CONFLICT (tenant_id, agent_id, config, term)
        DO UPDATE SET df = t.df + EXCLUDED.df, len = t.len + EXCLUDED.len;
        RETURN true;
    END
    $$;
COMMENT ON FUNCTION lexicon_fold(uuid, bigint) IS
    'Fold one agent''s lexicon_changes into lexicon_terms; false (nothing done) when another '
    'transaction holds the agent''s fold lock. Terms whose count falls to 0 keep a 0 row.';

CREATE OR REPLACE FUNCTION lexicon_rebuild(p_tenant uuid, p_agent bigint) RETURNS void
    LANGUAGE plpgsql
    AS $$
    BEGIN
        PERFORM pg_advisory_xact_lock(lexicon_lock_key(p_agent));
        WITH dropped AS (
            DELETE FROM lexicon_changes c WHERE c.tenant_id = p_tenant AND c.agent_id = p_agent
        ), scoped AS (
            SELECT m.content_tsv, m.content_tsv_en FROM memories m
            WHERE m.tenant_id = p_tenant AND m.agent_id = p_agent
        ), counted AS (
            SELECT 'simple'::regconfig AS config, l.lexeme AS term,
                   count(*)::bigint AS df, 0::bigint AS len
            FROM scoped m CROSS JOIN LATERAL unnest(m.content_tsv) l
            GROUP BY l.lexeme
            UNION ALL
            SELECT 'english'::regconfig, l.lexeme, count(*), 0
            FROM scoped m CROSS JOIN LATERAL unnest(m.content_tsv_en) l
            GROUP BY l.lexeme
            UNION ALL
            SELECT 'simple'::regconfig, '', count(*), coalesce(sum(length(m.content_tsv)), 0)
            FROM scoped m
            UNION ALL
            SELECT 'english'::regconfig, '', count(*), coalesce(sum(length(m.content_tsv_en)), 0)
            FROM scoped m WHERE m.content_tsv_en IS NOT NULL
        ), zeroed AS (
            UPDATE lexicon_terms t SET df = 0, len = 0
            WHERE t.tenant_id = p_tenant AND t.agent_id = p_agent
              AND NOT EXISTS (SELECT 1 FROM counted c
                              WHERE c.config = t.config AND c.term = t.term)
        )
        INSERT INTO lexicon_terms AS t (tenant_id, agent_id, config, term, df, len)
        SELECT p_tenant, p_agent, c.config, c.term, c.df, c.len
        FROM counted c
        ORDER BY c.config, c.term
        ON CONFLICT (tenant_id, agent_id, config, term)
        DO UPDATE SET df = EXCLUDED.df, len = EXCLUDED.len;
    END
    $$;
COMMENT ON FUNCTION lexicon_rebuild(uuid, bigint) IS
    'Recount one agent''s lexical statistics from its memories (idempotent; a repair tool '
    'and the migration''s backfill). One snapshot: changes committed later stay in the backlog.';

CREATE OR REPLACE FUNCTION lexicon_note() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    DECLARE
        agent record;
    BEGIN
        INSERT INTO lexicon_changes (tenant_id, agent_id, sign, simple, english)
        SELECT c.tenant_id, c.agent_id, CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END,
               c.content_tsv, c.content_tsv_en
        FROM changed c
        WHERE EXISTS (SELECT 1 FROM agents a WHERE a.tenant_id = c.tenant_id AND a.id = c.agent_id);
        FOR agent IN SELECT DISTINCT c.tenant_id, c.agent_id FROM changed c LOOP
            IF (SELECT count(*) FROM (SELECT 1 FROM lexicon_changes l
                                      WHERE l.tenant_id = agent.tenant_id
                                        AND l.agent_id = agent.agent_id LIMIT 64) b) >= 64 THEN
                PERFORM lexicon_fold(agent.tenant_id, agent.agent_id);
            END IF;
        END LOOP;
        RETURN NULL;
    END
    $$;
COMMENT ON FUNCTION lexicon_note() IS
    'After an insert or delete of memories: append their vectors to lexicon_changes (skipping '
    'agents being deleted) and fold an agent whose backlog reached 64.';
DROP TRIGGER IF EXISTS memories_lexicon_insert ON memories;
CREATE TRIGGER memories_lexicon_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION lexicon_note();
DROP TRIGGER IF EXISTS memories_lexicon_delete ON memories;
CREATE TRIGGER memories_lexicon_delete AFTER DELETE ON memories
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION lexicon_note();

CREATE OR REPLACE FUNCTION lexicon_note_edit() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        INSERT INTO lexicon_changes (tenant_id, agent_id, sign, simple, english)
        VALUES (OLD.tenant_id, OLD.agent_id, -1, OLD.content_tsv, OLD.content_tsv_en),
               (NEW.tenant_id, NEW.agent_id, 1, NEW.content_tsv, NEW.content_tsv_en);
        RETURN NULL;
    END
    $$;
COMMENT ON FUNCTION lexicon_note_edit() IS
    'After a content edit of a memory: its old vectors leave the statistics, the new ones enter.';
DROP TRIGGER IF EXISTS memories_lexicon_edit ON memories;
CREATE TRIGGER memories_lexicon_edit AFTER UPDATE OF content ON memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION lexicon_note_edit();

GRANT EXECUTE ON FUNCTION lexicon_lock_key(bigint), lexicon_fold(uuid, bigint),
    lexicon_rebuild(uuid, bigint) TO cpersona_app;
"""

BACKFILL = r"""
WITH batch AS (
    SELECT tenant_id, id FROM memories WHERE content_tsv_en IS NULL AND id > :after
    ORDER BY id LIMIT :batch
), done AS (
    UPDATE memories m SET content_tsv_en = to_tsvector('english'::regconfig, m.content)
    FROM batch WHERE m.tenant_id = batch.tenant_id AND m.id = batch.id
    RETURNING m.id
)
SELECT count(*), max(id) FROM done
"""

INVALID_INDEX = r"""
SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'memories_tsv_en' AND NOT i.indisvalid
"""

INDEX = r"""
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_tsv_en
    ON memories USING gin (tenant_id, agent_id, content_tsv_en)
"""

INDEX_COMMENT = r"""
COMMENT ON INDEX memories_tsv_en IS
    'Stemmed full text of one agent''s memories: (tenant, agent, English lexeme) postings.'
"""

AGENTS = "SELECT tenant_id, id FROM agents ORDER BY tenant_id, id"
REBUILD = "SELECT lexicon_rebuild(:tenant, :agent)"

DOWNGRADE = r"""
DROP TRIGGER IF EXISTS memories_lexicon_edit ON memories;
DROP TRIGGER IF EXISTS memories_lexicon_delete ON memories;
DROP TRIGGER IF EXISTS memories_lexicon_insert ON memories;
DROP FUNCTION IF EXISTS lexicon_note_edit();
DROP FUNCTION IF EXISTS lexicon_note();
DROP FUNCTION IF EXISTS lexicon_rebuild(uuid, bigint);
DROP FUNCTION IF EXISTS lexicon_fold(uuid, bigint);
DROP FUNCTION IF EXISTS lexicon_lock_key(bigint);
DROP TABLE IF EXISTS lexicon_changes;
DROP TABLE IF EXISTS lexicon_terms;
DROP INDEX IF EXISTS memories_tsv_en;
DROP TRIGGER IF EXISTS memories_tsv_en ON memories;
DROP FUNCTION IF EXISTS memories_tsv_en();
ALTER TABLE memories DROP COLUMN IF EXISTS content_tsv_en;
"""


def backfill(bind: Connection, batch: int = BATCH) -> int:
    """Fill ``content_tsv_en`` of existing rows, ``batch`` rows per transaction (the
    connection autocommits); returns the rows filled. Resumable: it only picks rows
    that have none."""
    after, total = 0, 0
    while True:
        count, last = bind.execute(text(BACKFILL), {"after": after, "batch": batch}).one()
        if not count:
            return total
        total += int(count)
        after = int(last)


def upgrade() -> None:
    op.execute(CATALOGUE)
    with op.get_context().autocommit_block():
        bind = op.get_bind()
        backfill(bind)
        if bind.execute(text(INVALID_INDEX)).first() is not None:
            bind.execute(text("DROP INDEX CONCURRENTLY memories_tsv_en"))
        bind.execute(text(INDEX))
        bind.execute(text(INDEX_COMMENT))
        for tenant, agent in bind.execute(text(AGENTS)).all():
            bind.execute(text(REBUILD), {"tenant": tenant, "agent": agent})


def downgrade() -> None:
    op.execute(DOWNGRADE)
