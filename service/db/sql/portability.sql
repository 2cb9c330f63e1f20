-- item_counts --
-- Memories, episodes and profiles of one agent, or of every agent of the tenant: the
-- counts an export header declares and what a move leaves at its source.
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = every agent)
SELECT
    (SELECT count(*) FROM memories
      WHERE tenant_id = $1 AND ($2::bigint IS NULL OR agent_id = $2)) AS memories,
    (SELECT count(*) FROM episodes
      WHERE tenant_id = $1 AND ($2::bigint IS NULL OR agent_id = $2)) AS episodes,
    (SELECT count(*) FROM profiles
      WHERE tenant_id = $1 AND ($2::bigint IS NULL OR agent_id = $2)) AS profiles

-- export_memories --
-- Memories in id order for an export cursor, with the owner's name; the embedding only
-- when asked for (it is most of the bytes).
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = every agent), $3 include embeddings boolean
SELECT m.id, a.name AS agent_name, m.msg_id, m.content, m.source, m.timestamp_text,
       m.metadata, m.created_at, m.project_id, m.channel, m.locked, m.recall_count,
       m.last_recalled_at, CASE WHEN $3::boolean THEN m.embedding END AS embedding
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
WHERE m.tenant_id = $1 AND ($2::bigint IS NULL OR m.agent_id = $2)
ORDER BY m.id

-- export_episodes --
-- Episodes in id order for an export cursor, with the owner's name.
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = every agent), $3 include embeddings boolean
SELECT e.id, a.name AS agent_name, e.summary, e.keywords, e.start_time, e.end_time,
       e.created_at, e.resolved, e.project_id, e.channel,
       CASE WHEN $3::boolean THEN e.embedding END AS embedding
FROM episodes e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE e.tenant_id = $1 AND ($2::bigint IS NULL OR e.agent_id = $2)
ORDER BY e.id

-- export_profiles --
-- Profiles ordered by owner name and user_id for an export cursor.
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = every agent)
SELECT a.name AS agent_name, p.user_id, p.content, p.updated_at, p.project_id
FROM profiles p
JOIN agents a ON a.tenant_id = p.tenant_id AND a.id = p.agent_id
WHERE p.tenant_id = $1 AND ($2::bigint IS NULL OR p.agent_id = $2)
ORDER BY a.name, p.user_id

-- import_memories --
-- Insert a batch of imported memories in file order. A row whose exact bucket already
-- holds its msg_id (agent, project, msg_id) or its content (agent, project, channel,
-- content), in the table or earlier in the same batch, is skipped by the unique indexes
-- (ON CONFLICT DO NOTHING). Inserted rows without a vector of the configured model (no
-- vector, or no model: a vector of another width) are queued for the embedding worker
-- when :queue. Returns how many rows were inserted.
-- :tenant_id uuid, :agent_id bigint[], :project_id text[], :channel text[],
-- :msg_id text[], :content text[], :source JSON text[], :timestamp_text text[],
-- :timestamp_at timestamptz[], :metadata JSON text[], :created_at timestamptz[],
-- :locked boolean[], :recall_count int[], :last_recalled_at timestamptz[],
-- :embedding_model text[], :embedding vector[], :queue rows to embed boolean
WITH batch AS (
    SELECT *
    FROM unnest(:agent_id::bigint[], :project_id::text[], :channel::text[], :msg_id::text[], :content::text[], :source::text[],
                :timestamp_text::text[], :timestamp_at::timestamptz[], :metadata::text[], :created_at::timestamptz[],
                :locked::boolean[], :recall_count::int[], :last_recalled_at::timestamptz[], :embedding_model::text[], :embedding::vector[])
         WITH ORDINALITY AS b(agent_id, project_id, channel, msg_id, content, source,
                              timestamp_text, timestamp_at, metadata, created_at, locked,
                              recall_count, last_recalled_at, embedding_model, embedding, ord)
), inserted AS (
    INSERT INTO memories (tenant_id, agent_id, project_id, channel, msg_id, content, source,
                          timestamp_text, timestamp_at, metadata, created_at, locked,
                          recall_count, last_recalled_at, embedding, embedding_model)
    SELECT :tenant_id, b.agent_id, b.project_id, b.channel, b.msg_id, b.content, b.source::jsonb,
           b.timestamp_text, b.timestamp_at, b.metadata::jsonb,
           coalesce(b.created_at, clock_timestamp()), b.locked, b.recall_count,
           b.last_recalled_at, b.embedding, b.embedding_model
    FROM batch b
    ORDER BY b.ord
    ON CONFLICT DO NOTHING
    RETURNING id, embedding IS NULL OR embedding_model IS NULL AS to_embed
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT :tenant_id, 'mem', i.id FROM inserted i WHERE :queue::boolean AND i.to_embed
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
)
SELECT count(*) FROM inserted

-- import_episodes --
-- Insert a batch of imported episodes in file order, skipping any whose (agent, project,
-- channel, summary) already exists or appeared earlier in the batch (episodes have no
-- unique index: this probe is their only dedup). Inserted rows without a vector of the
-- configured model are queued when :queue. Returns how many rows were inserted.
-- :tenant_id uuid, :agent_id bigint[], :project_id text[], :channel text[],
-- :summary text[], :keywords text[], :start_time text[], :end_time text[],
-- :resolved boolean[], :created_at timestamptz[], :embedding_model text[],
-- :embedding vector[], :queue rows to embed boolean
WITH batch AS (
    SELECT *
    FROM unnest(:agent_id::bigint[], :project_id::text[], :channel::text[], :summary::text[], :keywords::text[], :start_time::text[],
                :end_time::text[], :resolved::boolean[], :created_at::timestamptz[], :embedding_model::text[], :embedding::vector[])
         WITH ORDINALITY AS b(agent_id, project_id, channel, summary, keywords, start_time,
                              end_time, resolved, created_at, embedding_model, embedding, ord)
), firsts AS (
    SELECT DISTINCT ON (agent_id, project_id, channel, summary) *
    FROM batch
    ORDER BY agent_id, project_id, channel, summary, ord
), inserted AS (
    INSERT INTO episodes (tenant_id, agent_id, project_id, channel, summary, keywords,
                          start_time, end_time, resolved, created_at, embedding,
                          embedding_model)
    SELECT :tenant_id, f.agent_id, f.project_id, f.channel, f.summary, f.keywords, f.start_time,
           f.end_time, f.resolved, coalesce(f.created_at, clock_timestamp()), f.embedding,
           f.embedding_model
    FROM firsts f
    WHERE NOT EXISTS (
        SELECT 1 FROM episodes e
        WHERE e.tenant_id = :tenant_id AND e.agent_id = f.agent_id AND e.project_id = f.project_id
          AND e.channel = f.channel AND e.summary = f.summary)
    ORDER BY f.ord
    RETURNING id, embedding IS NULL OR embedding_model IS NULL AS to_embed
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT :tenant_id, 'ep', i.id FROM inserted i WHERE :queue::boolean AND i.to_embed
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
)
SELECT count(*) FROM inserted

-- import_profile --
-- Upsert an imported profile on (agent, user_id): content and the file's updated_at
-- overwrite an existing row (spec 10.4), project_id is only set on a new row.
-- $1 tenant_id uuid, $2 agent_id bigint, $3 user_id text, $4 project_id text,
-- $5 content text, $6 updated_at timestamptz (NULL = now)
INSERT INTO profiles (tenant_id, agent_id, user_id, project_id, content, updated_at)
VALUES ($1, $2, $3, $4, $5, coalesce($6, clock_timestamp()))
ON CONFLICT (tenant_id, agent_id, user_id)
DO UPDATE SET content = EXCLUDED.content, updated_at = EXCLUDED.updated_at

-- merge_memories --
-- Copy one chunk of the source agent's memories (ids after $4, at most $5, id order) to
-- the target verbatim: embedding, lock, created_at and recall statistics included. A row
-- whose exact bucket the target already holds (msg_id or content) is skipped by the
-- unique indexes. With $6 (move) exactly the copied source rows are deleted (found again
-- by their bucket, unique per agent) together with their embedding jobs; with $7 copies
-- without an embedding are queued. Returns the chunk's last id (NULL: no rows left) and
-- the rows considered, copied, deleted and jobs dropped.
-- $1 tenant_id uuid, $2 source agent_id bigint, $3 target agent_id bigint,
-- $4 after id bigint, $5 chunk size int, $6 move boolean, $7 queue missing embeddings
-- boolean
WITH chunk AS (
    SELECT * FROM memories
    WHERE tenant_id = $1 AND agent_id = $2 AND id > $4
    ORDER BY id
    LIMIT $5
), copied AS (
    INSERT INTO memories (tenant_id, agent_id, project_id, channel, msg_id, content, source,
                          timestamp_text, timestamp_at, metadata, embedding, embedding_model,
                          recall_count, last_recalled_at, locked, created_at)
    SELECT $1, $3, c.project_id, c.channel, c.msg_id, c.content, c.source, c.timestamp_text,
           c.timestamp_at, c.metadata, c.embedding, c.embedding_model, c.recall_count,
           c.last_recalled_at, c.locked, c.created_at
    FROM chunk c
    WHERE c.content <> ''
    ORDER BY c.id
    ON CONFLICT DO NOTHING
    RETURNING id, project_id, channel, content_hash, embedding IS NULL AS unembedded
), deleted AS (
    DELETE FROM memories s
    USING copied k
    WHERE $6::boolean AND s.tenant_id = $1 AND s.agent_id = $2
      AND s.project_id = k.project_id AND s.channel = k.channel
      AND s.content_hash = k.content_hash
    RETURNING s.id
), dropped AS (
    DELETE FROM embedding_jobs j
    USING deleted d
    WHERE j.tenant_id = $1 AND j.item_kind = 'mem' AND j.item_id = d.id
    RETURNING 1
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, 'mem', k.id FROM copied k WHERE $7::boolean AND k.unembedded
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM chunk WHERE content <> '') AS considered,
       (SELECT count(*) FROM copied) AS copied,
       (SELECT count(*) FROM deleted) AS deleted,
       (SELECT count(*) FROM dropped) AS jobs_dropped

-- merge_episodes --
-- Copy one chunk of the source agent's episodes (ids after $4, at most $5, id order) to
-- the target with created_at and embedding, unless the target already has the same
-- (project, channel, summary) or an earlier row of the chunk does. With $6 (move) the
-- copied source rows and their embedding jobs are deleted; with $7 copies without an
-- embedding are queued. Returns the chunk's last id (NULL: no rows left) and the rows
-- considered, copied, deleted and jobs dropped.
-- $1 tenant_id uuid, $2 source agent_id bigint, $3 target agent_id bigint,
-- $4 after id bigint, $5 chunk size int, $6 move boolean, $7 queue missing embeddings
-- boolean
WITH chunk AS (
    SELECT * FROM episodes
    WHERE tenant_id = $1 AND agent_id = $2 AND id > $4
    ORDER BY id
    LIMIT $5
), fresh AS (
    SELECT DISTINCT ON (c.project_id, c.channel, c.summary) c.*
    FROM chunk c
    WHERE c.summary <> ''
      AND NOT EXISTS (
          SELECT 1 FROM episodes t
          WHERE t.tenant_id = $1 AND t.agent_id = $3 AND t.project_id = c.project_id
            AND t.channel = c.channel AND t.summary = c.summary)
    ORDER BY c.project_id, c.channel, c.summary, c.id
), copied AS (
    INSERT INTO episodes (tenant_id, agent_id, project_id, channel, summary, keywords,
                          embedding, embedding_model, start_time, end_time, resolved,
                          created_at)
    SELECT $1, $3, f.project_id, f.channel, f.summary, f.keywords, f.embedding,
           f.embedding_model, f.start_time, f.end_time, f.resolved, f.created_at
    FROM fresh f
    ORDER BY f.id
    RETURNING id, embedding IS NULL AS unembedded
), deleted AS (
    DELETE FROM episodes s
    WHERE $6::boolean AND s.tenant_id = $1 AND s.agent_id = $2
      AND s.id IN (SELECT id FROM fresh)
    RETURNING s.id
), dropped AS (
    DELETE FROM embedding_jobs j
    USING deleted d
    WHERE j.tenant_id = $1 AND j.item_kind = 'ep' AND j.item_id = d.id
    RETURNING 1
), queued AS (
    INSERT INTO embedding_jobs (tenant_id, item_kind, item_id)
    SELECT $1, 'ep', k.id FROM copied k WHERE $7::boolean AND k.unembedded
    ON CONFLICT (tenant_id, item_kind, item_id) DO NOTHING
)
SELECT (SELECT max(id) FROM chunk) AS last_id,
       (SELECT count(*) FROM chunk WHERE summary <> '') AS considered,
       (SELECT count(*) FROM copied) AS copied,
       (SELECT count(*) FROM deleted) AS deleted,
       (SELECT count(*) FROM dropped) AS jobs_dropped

-- merge_profiles --
-- Copy the source agent's profiles to the target where the target has none for that
-- user_id (never overwrites), keeping updated_at; with $4 (move) delete exactly the
-- copied source rows. Returns the rows considered, copied and deleted.
-- $1 tenant_id uuid, $2 source agent_id bigint, $3 target agent_id bigint, $4 move boolean
WITH source_rows AS (
    SELECT * FROM profiles WHERE tenant_id = $1 AND agent_id = $2 AND content <> ''
), copied AS (
    INSERT INTO profiles (tenant_id, agent_id, user_id, project_id, content, updated_at)
    SELECT $1, $3, s.user_id, s.project_id, s.content, s.updated_at
    FROM source_rows s
    ORDER BY s.id
    ON CONFLICT (tenant_id, agent_id, user_id) DO NOTHING
    RETURNING user_id
), deleted AS (
    DELETE FROM profiles p
    USING copied k
    WHERE $4::boolean AND p.tenant_id = $1 AND p.agent_id = $2 AND p.user_id = k.user_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM source_rows) AS considered,
       (SELECT count(*) FROM copied) AS copied,
       (SELECT count(*) FROM deleted) AS deleted
