-- enqueue_embedding --
-- Queue one memory or episode for embedding, in the transaction that wrote it, so a
-- crash after the commit still leaves the job. Written rows have no vector at all, so
-- their jobs are dated an hour back and sort before bulk re-embeds (whose rows still
-- have an older one). An existing job (even one a worker holds) is reset: due at once
-- with a clean retry count, and the new run_after invalidates the holder's claim
-- token so the fresh content is embedded.
-- $1 tenant_id uuid, $2 item_kind text ('mem'|'ep'), $3 item_id bigint,
-- $4 last_error text (why the inline embedding failed; NULL when none was tried)
INSERT INTO embedding_jobs (tenant_id, item_kind, item_id, last_error, run_after)
VALUES ($1, $2, $3, $4, clock_timestamp() - interval '1 hour')
ON CONFLICT (tenant_id, item_kind, item_id) DO UPDATE
SET attempts = 0, run_after = EXCLUDED.run_after, last_error = EXCLUDED.last_error

-- delete_embedding_job --
-- Drop the job of one item (it was deleted, or embedded inline). Returns the count.
-- $1 tenant_id uuid, $2 item_kind text, $3 item_id bigint
WITH gone AS (
    DELETE FROM embedding_jobs
    WHERE tenant_id = $1 AND item_kind = $2 AND item_id = $3
    RETURNING 1
)
SELECT count(*) FROM gone

-- delete_agent_embedding_jobs --
-- Drop the jobs of every memory and episode of one agent (delete_agent_data's
-- deleted_pending_tasks); run before the rows themselves are deleted.
-- $1 tenant_id uuid, $2 agent_id bigint
WITH gone AS (
    DELETE FROM embedding_jobs j
    WHERE j.tenant_id = $1
      AND ((j.item_kind = 'mem' AND j.item_id IN (
               SELECT id FROM memories WHERE tenant_id = $1 AND agent_id = $2))
        OR (j.item_kind = 'ep' AND j.item_id IN (
               SELECT id FROM episodes WHERE tenant_id = $1 AND agent_id = $2)))
    RETURNING 1
)
SELECT count(*) FROM gone

-- claim_embedding_jobs --
-- Claim due jobs across tenants (admin transaction; several workers never take the
-- same job thanks to SKIP LOCKED). The claim is a lease: run_after moves past the
-- embedding time, and that new run_after is the claim token the worker must match
-- when it finishes, so a job re-queued or re-claimed meanwhile is not touched. No job
-- is ever given up: however often it failed, it is claimed again once due.
-- $1 limit int, $2 lease seconds float8, $3 tenant_id uuid (NULL = all)
WITH due AS (
    SELECT tenant_id, id FROM embedding_jobs
    WHERE run_after <= clock_timestamp()
      AND ($3::uuid IS NULL OR tenant_id = $3)
    ORDER BY run_after, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE embedding_jobs j
SET run_after = clock_timestamp() + make_interval(secs => $2)
FROM due
WHERE j.tenant_id = due.tenant_id AND j.id = due.id
RETURNING j.tenant_id, j.id, j.item_kind, j.item_id, j.attempts, j.run_after AS token

-- claim_embedding_items --
-- Claim the jobs of the given items of one tenant (the write-behind path: rows this
-- process just wrote) and read their text in the same statement, so a batch costs one
-- tenant transaction before the model call. The same lease and claim token as
-- claim_embedding_jobs, and the same guard against doing work twice: a job another
-- worker holds is locked (SKIP LOCKED) or leased into the future (not due), so it is
-- left to that worker; an item without a job (already embedded) is not returned. The
-- text and hash are embedding_texts'; they are NULL when the row is gone (the job is
-- then settled as done).
-- $1 tenant_id uuid, $2 item_kinds text[], $3 item_ids bigint[], $4 lease seconds float8
WITH wanted AS (
    SELECT * FROM unnest($2::text[], $3::bigint[]) AS w (item_kind, item_id)
), due AS (
    SELECT j.id FROM embedding_jobs j
    JOIN wanted w ON j.item_kind = w.item_kind AND j.item_id = w.item_id
    WHERE j.tenant_id = $1 AND j.run_after <= clock_timestamp()
    FOR UPDATE OF j SKIP LOCKED
), claimed AS (
    UPDATE embedding_jobs j
    SET run_after = clock_timestamp() + make_interval(secs => $4)
    FROM due
    WHERE j.tenant_id = $1 AND j.id = due.id
    RETURNING j.tenant_id, j.id, j.item_kind, j.item_id, j.attempts, j.run_after AS token
)
SELECT c.tenant_id, c.id, c.item_kind, c.item_id, c.attempts, c.token,
       coalesce(m.content, e.text) AS text,
       coalesce(m.content_hash, decode(md5(e.text), 'hex')) AS hash
FROM claimed c
LEFT JOIN memories m ON c.item_kind = 'mem' AND m.tenant_id = $1 AND m.id = c.item_id
LEFT JOIN LATERAL (
    SELECT episode_text(ep.summary, ep.keywords) AS text FROM episodes ep
    WHERE c.item_kind = 'ep' AND ep.tenant_id = $1 AND ep.id = c.item_id
) e ON true

-- embedding_texts --
-- The text to embed for claimed items of one tenant, with a hash of it that the
-- write-back compares (a row edited meanwhile is not given a stale vector). Episodes
-- embed episode_text (summary and keywords, migration 0014). Deleted rows are absent.
-- $1 tenant_id uuid, $2 memory ids bigint[], $3 episode ids bigint[]
SELECT 'mem' AS kind, id, content AS text, content_hash AS hash
FROM memories
WHERE tenant_id = $1 AND id = ANY ($2::bigint[])
UNION ALL
SELECT 'ep', id, episode_text(summary, keywords),
       decode(md5(episode_text(summary, keywords)), 'hex')
FROM episodes
WHERE tenant_id = $1 AND id = ANY ($3::bigint[])

-- settle_embeddings --
-- Write the vectors of one tenant's claimed rows and finish their jobs in one statement
-- (one round trip per batch and tenant). A vector is written only where the row's text
-- still hashes to what was embedded; vectors travel as pgvector text ('[x,y,...]').
-- The rows that took their vector get their passages in the same statement (the
-- passages given for them upserted by index, any beyond their count deleted, so a row
-- that became short loses them) and, when passages are on, passages_hash: the hash of
-- the text they were cut from. Jobs whose claim token still matches are finished:
-- deleted when done (the row took its vector, or the row is gone: no vector given),
-- made due again at once otherwise (the text changed while it was embedded). Memories
-- and episodes share one id sequence, so an item id names one row. Returns the rows
-- that took their vector, the jobs deleted and re-queued and the passages written.
-- :tenant_id uuid, :job_ids bigint[], :tokens (claim) timestamptz[],
-- :kinds (item) text[], :ids (item) bigint[], :hashes (text; NULL: row gone) bytea[],
-- :embeddings (NULL: row gone) text[], :model (embedding_model) text,
-- :passages_on boolean, :passage_ids (item) bigint[], :passage_idx int[],
-- :passage_starts int[], :passage_ends int[], :passage_embeddings text[]
WITH f AS (
    SELECT * FROM unnest(:job_ids::bigint[], :tokens::timestamptz[], :kinds::text[], :ids::bigint[],
                         :hashes::bytea[], :embeddings::text[])
        AS f (job_id, token, kind, id, hash, embedding)
), mem AS (
    UPDATE memories m
    SET embedding = f.embedding::vector, embedding_model = :model,
        passages_hash = CASE WHEN :passages_on THEN f.hash ELSE m.passages_hash END
    FROM f
    WHERE f.kind = 'mem' AND f.embedding IS NOT NULL
      AND m.tenant_id = :tenant_id AND m.id = f.id AND m.content_hash = f.hash
    RETURNING m.id, m.agent_id, f.kind, f.hash
), ep AS (
    UPDATE episodes e
    SET embedding = f.embedding::vector, embedding_model = :model,
        passages_hash = CASE WHEN :passages_on THEN f.hash ELSE e.passages_hash END
    FROM f
    WHERE f.kind = 'ep' AND f.embedding IS NOT NULL AND e.tenant_id = :tenant_id AND e.id = f.id
      AND decode(md5(episode_text(e.summary, e.keywords)), 'hex') = f.hash
    RETURNING e.id, e.agent_id, f.kind, f.hash
), stored AS (
    SELECT id, agent_id, kind, hash FROM mem UNION ALL SELECT id, agent_id, kind, hash FROM ep
), p AS (
    SELECT * FROM unnest(:passage_ids::bigint[], :passage_idx::int[], :passage_starts::int[], :passage_ends::int[], :passage_embeddings::text[])
        AS p (id, idx, start_char, end_char, embedding)
), put AS (
    INSERT INTO passages (tenant_id, agent_id, item_kind, item_id, idx, source_hash,
                          start_char, end_char, embedding, embedding_model)
    SELECT :tenant_id, s.agent_id, s.kind, s.id, p.idx, s.hash, p.start_char, p.end_char,
           p.embedding::vector, :model
    FROM p JOIN stored s ON s.id = p.id
    ON CONFLICT (tenant_id, item_kind, item_id, idx) DO UPDATE
    SET agent_id = EXCLUDED.agent_id, source_hash = EXCLUDED.source_hash,
        start_char = EXCLUDED.start_char,
        end_char = EXCLUDED.end_char, embedding = EXCLUDED.embedding,
        embedding_model = EXCLUDED.embedding_model, created_at = clock_timestamp()
    RETURNING 1
), cut AS (
    DELETE FROM passages x
    USING stored s
    WHERE x.tenant_id = :tenant_id AND x.item_kind = s.kind AND x.item_id = s.id
      AND x.idx >= (SELECT count(*) FROM p WHERE p.id = s.id)
), gone AS (
    DELETE FROM embedding_jobs j
    USING f
    WHERE j.tenant_id = :tenant_id AND j.id = f.job_id AND j.run_after = f.token
      AND (f.embedding IS NULL OR f.id IN (SELECT id FROM stored))
    RETURNING j.id
), again AS (
    UPDATE embedding_jobs j
    SET run_after = clock_timestamp()
    FROM f
    WHERE j.tenant_id = :tenant_id AND j.id = f.job_id AND j.run_after = f.token
      AND f.embedding IS NOT NULL AND f.id NOT IN (SELECT id FROM stored)
    RETURNING j.id
)
SELECT (SELECT count(*) FROM stored) AS embedded,
       (SELECT count(*) FROM gone) AS finished,
       (SELECT count(*) FROM again) AS requeued,
       (SELECT count(*) FROM put) AS passages

-- fail_embedding_jobs --
-- Record a failed attempt of claimed jobs (admin transaction, across tenants): one more
-- attempt, the error, and capped exponential backoff: delay * 2^attempts (before this
-- one), the exponent capped at $6, so a job is retried at least every delay * 2^$6
-- seconds for as long as the provider fails. When not $7 (the provider was not called:
-- its circuit breaker is open) the jobs are handed back uncounted, due again in $5
-- seconds, keeping their last error.
-- $1 tenant_ids uuid[], $2 job ids bigint[], $3 claim tokens timestamptz[],
-- $4 errors text[], $5 base delay seconds float8, $6 most doublings int,
-- $7 attempted boolean
UPDATE embedding_jobs j
SET attempts = j.attempts + CASE WHEN $7 THEN 1 ELSE 0 END,
    run_after = clock_timestamp() + make_interval(
        secs => CASE WHEN $7 THEN $5 * power(2, least(j.attempts, $6, 20)) ELSE $5 END),
    last_error = CASE WHEN $7 THEN f.error ELSE j.last_error END
FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::text[]) AS f (tenant_id, id, token, error)
WHERE j.tenant_id = f.tenant_id AND j.id = f.id AND j.run_after = f.token

-- queue_status --
-- One tenant's backlog: every job still to run, those retrying after a failed attempt,
-- the age of the oldest (seconds, NULL when none), and the jobs whose row is longer
-- than $2 characters (their passages are built with them; 0 when $2 is NULL: passages
-- off).
-- $1 tenant_id uuid, $2 most characters of a text that fits one window int
SELECT count(*) AS pending,
       count(*) FILTER (WHERE attempts > 0) AS retrying,
       extract(epoch FROM clock_timestamp() - min(created_at)) AS oldest_pending_seconds,
       count(*) FILTER (WHERE $2::int IS NOT NULL AND (
           EXISTS (SELECT 1 FROM memories m
                   WHERE j.item_kind = 'mem' AND m.tenant_id = $1 AND m.id = j.item_id
                     AND char_length(m.content) > $2)
           OR EXISTS (SELECT 1 FROM episodes e
                      WHERE j.item_kind = 'ep' AND e.tenant_id = $1 AND e.id = j.item_id
                        AND char_length(episode_text(e.summary, e.keywords)) > $2)))
           AS passages_pending
FROM embedding_jobs j
WHERE tenant_id = $1

-- queue_backlog --
-- The backlog of every tenant or of one (admin transaction; re-embed progress, /metrics),
-- with the jobs whose row is longer than $2 characters as in queue_status.
-- $1 tenant_id uuid (NULL = all tenants), $2 most characters of a text that fits one
-- window int (NULL: passages off)
SELECT count(*) AS pending,
       count(*) FILTER (WHERE attempts > 0) AS retrying,
       extract(epoch FROM clock_timestamp() - min(created_at)) AS oldest_pending_seconds,
       count(*) FILTER (WHERE $2::int IS NOT NULL AND (
           EXISTS (SELECT 1 FROM memories m
                   WHERE j.item_kind = 'mem' AND m.tenant_id = j.tenant_id
                     AND m.id = j.item_id AND char_length(m.content) > $2)
           OR EXISTS (SELECT 1 FROM episodes e
                      WHERE j.item_kind = 'ep' AND e.tenant_id = j.tenant_id
                        AND e.id = j.item_id
                        AND char_length(episode_text(e.summary, e.keywords)) > $2)))
           AS passages_pending
FROM embedding_jobs j
WHERE $1::uuid IS NULL OR tenant_id = $1

-- enqueue_unembedded --
-- Queue the next batch of one tenant's rows without an embedding (memories and
-- episodes share one id sequence, so one id cursor walks both); existing jobs are
-- kept. Uses the partial indexes on unembedded rows. Returns the cursor (NULL at the
-- end) and how many jobs were added.
-- $1 tenant_id uuid, $2 after id bigint, $3 batch size int
WITH picked AS (
    SELECT kind, id FROM (
        (SELECT 'mem' AS kind, id FROM memories
         WHERE tenant_id = $1 AND embedding IS NULL AND id > $2 ORDER BY id LIMIT $3)
        UNION ALL
        (SELECT 'ep', id FROM episodes
         WHERE tenant_id = $1 AND embedding IS NULL AND id > $2 ORDER BY id LIMIT $3)
    ) both_kinds
    ORDER BY id LIMIT $3
), added AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, kind, id FROM picked
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
    RETURNING 1
)
SELECT (SELECT max(id) FROM picked) AS cursor, (SELECT count(*) FROM added) AS added

-- enqueue_reembed --
-- Queue the next batch of one tenant's rows whose vector is missing, from another model
-- or of another width (or every row when $5). With $6 existing jobs are reset (due
-- now, attempts 0). Returns the cursor (NULL at the end) and how many jobs were added
-- or reset.
-- $1 tenant_id uuid, $2 after id bigint, $3 batch size int, $4 embedding_model text,
-- $5 every row boolean, $6 reset existing jobs boolean, $7 embedding width int
WITH picked AS (
    SELECT kind, id FROM (
        (SELECT 'mem' AS kind, id FROM memories
         WHERE tenant_id = $1 AND id > $2
           AND ($5 OR embedding IS NULL OR embedding_model IS DISTINCT FROM $4
                OR embedding_dim IS DISTINCT FROM $7)
         ORDER BY id LIMIT $3)
        UNION ALL
        (SELECT 'ep', id FROM episodes
         WHERE tenant_id = $1 AND id > $2
           AND ($5 OR embedding IS NULL OR embedding_model IS DISTINCT FROM $4
                OR embedding_dim IS DISTINCT FROM $7)
         ORDER BY id LIMIT $3)
    ) both_kinds
    ORDER BY id LIMIT $3
), added AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, kind, id FROM picked
    ON CONFLICT (tenant_id, item_kind, item_id) DO UPDATE
    SET attempts = 0, run_after = clock_timestamp(), last_error = NULL
    WHERE $6
    RETURNING 1
)
SELECT (SELECT max(id) FROM picked) AS cursor, (SELECT count(*) FROM added) AS added

-- passage_candidates --
-- The passage backfill's next batch of one tenant (docs/architecture.md, "Passages"):
-- of the next $3 rows by id (memories and episodes share one id sequence), those
-- longer than $4 characters whose passages were never built for their current text,
-- with that text and its hash, for the caller to measure. Every row carries the
-- batch's cursor (its last id read; NULL at the end); a batch without such a row comes
-- back as one row of the cursor alone (kind NULL). Bounded by the rows it reads, and
-- only the candidates' texts are returned.
-- $1 tenant_id uuid, $2 after id bigint, $3 batch size int, $4 most characters of a
-- text that fits one window int
WITH scanned AS MATERIALIZED (
    SELECT kind, id, text, hash FROM (
        (SELECT 'mem' AS kind, id,
                CASE WHEN char_length(content) > $4 AND passages_hash IS DISTINCT FROM content_hash
                     THEN content END AS text,
                content_hash AS hash
         FROM memories WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3)
        UNION ALL
        (SELECT 'ep', e.id,
                CASE WHEN char_length(t.text) > $4
                      AND e.passages_hash IS DISTINCT FROM decode(md5(t.text), 'hex')
                     THEN t.text END,
                decode(md5(t.text), 'hex')
         FROM episodes e CROSS JOIN LATERAL (SELECT episode_text(e.summary, e.keywords) AS text) t
         WHERE e.tenant_id = $1 AND e.id > $2 ORDER BY e.id LIMIT $3)
    ) both_kinds
    ORDER BY id LIMIT $3
)
SELECT c.cursor, s.kind, s.id, s.text, s.hash
FROM (SELECT max(id) AS cursor FROM scanned) c
LEFT JOIN scanned s ON s.text IS NOT NULL

-- enqueue_passage_jobs --
-- A job for each given row of one tenant (the backfill's rows that need passages;
-- existing jobs are kept). Returns how many were added.
-- $1 tenant_id uuid, $2 kinds text[], $3 ids bigint[]
WITH added AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, x.kind, x.id FROM unnest($2::text[], $3::bigint[]) AS x (kind, id)
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM added

-- passages_fit --
-- The backfill's rows of one tenant whose text fits one window after all: no passages
-- for that text (any of an older text removed) and passages_hash set to the measured
-- text's hash, so no job re-embeds them. A row whose text changed since it was measured
-- is left to its own job. Returns how many rows were marked.
-- $1 tenant_id uuid, $2 kinds text[], $3 ids bigint[], $4 hashes (of the measured texts) bytea[]
WITH f AS (
    SELECT * FROM unnest($2::text[], $3::bigint[], $4::bytea[]) AS f (kind, id, hash)
), mem AS (
    UPDATE memories m SET passages_hash = f.hash
    FROM f
    WHERE f.kind = 'mem' AND m.tenant_id = $1 AND m.id = f.id AND m.content_hash = f.hash
    RETURNING 'mem'::text AS kind, m.id
), ep AS (
    UPDATE episodes e SET passages_hash = f.hash
    FROM f
    WHERE f.kind = 'ep' AND e.tenant_id = $1 AND e.id = f.id
      AND decode(md5(episode_text(e.summary, e.keywords)), 'hex') = f.hash
    RETURNING 'ep'::text AS kind, e.id
), marked AS (
    SELECT kind, id FROM mem UNION ALL SELECT kind, id FROM ep
), cleared AS (
    DELETE FROM passages x USING marked
    WHERE x.tenant_id = $1 AND x.item_kind = marked.kind AND x.item_id = marked.id
    RETURNING 1
)
SELECT count(*) FROM marked

-- embedding_settings --
-- The recorded embedding model and width of the deployment (no row before the first
-- start with embeddings on).
SELECT model, dimension FROM embedding_settings WHERE id

-- record_embedding_settings --
-- Record the model and width now in use (admin transaction).
-- $1 model text, $2 dimension int
INSERT INTO embedding_settings (id, model, dimension)
VALUES (true, $1, $2)
ON CONFLICT (id) DO UPDATE
SET model = EXCLUDED.model, dimension = EXCLUDED.dimension, updated_at = now()

-- tenant_ids --
-- Every tenant id, oldest first (model-change re-embedding walks them one by one).
SELECT id FROM tenants ORDER BY created_at, id

-- vacuum_rewritten --
-- VACUUM (ANALYZE) of the tables a re-embed and the passage backfill rewrite (run by
-- `cpersona-service reembed` after its drain; docs/reliability.md, "the backfill's marks
-- are updates"): every rewritten row left its old version in each index of its table,
-- which recall reads past until a vacuum, and autovacuum's threshold (20 % of the table)
-- may not come. Outside any transaction, as the database owner; a table the role may not
-- maintain is skipped by Postgres with a warning.
VACUUM (ANALYZE) memories, episodes, passages
