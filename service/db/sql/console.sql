-- insert_console_session --
-- Open a console session for the key a person signed in with: its id's hash, how long
-- it may stay idle and when it ends whatever its use.
-- $1 tenant_id uuid, $2 session_hash bytea, $3 key_prefix text, $4 idle_seconds int4,
-- $5 lifetime_seconds float8
INSERT INTO console_sessions (tenant_id, session_hash, key_prefix, idle_seconds, expires_at)
VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))

-- console_session_for_auth --
-- The caller of a presented console session: used within its idle limit, before its
-- absolute expiry, and its key neither revoked nor expired; the use is recorded (the
-- idle limit runs from now). No row: unknown or ended session.
-- $1 session_hash bytea
UPDATE console_sessions s
SET seen_at = now()
FROM api_keys k, tenants t
WHERE s.session_hash = $1
  AND k.tenant_id = s.tenant_id AND k.prefix = s.key_prefix AND t.id = s.tenant_id
  AND s.seen_at + make_interval(secs => s.idle_seconds) > now()
  AND s.expires_at > now()
  AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
RETURNING k.prefix, k.label, k.grants, k.tool_set, t.id AS tenant_id, t.slug AS tenant_slug

-- delete_console_session --
-- Sign-out: the session's row goes, so its cookie authenticates nothing any more.
-- $1 session_hash bytea
DELETE FROM console_sessions WHERE session_hash = $1

-- delete_ended_console_sessions --
-- Drop sessions of every tenant that ended (idle, expired) before now (run at sign-in).
DELETE FROM console_sessions
WHERE expires_at <= now() OR seen_at + make_interval(secs => idle_seconds) <= now()

-- console_agents --
-- One page of a tenant's agents a key may read, by name after a cursor, with their
-- counts: memories, episodes, locked memories, embedding jobs pending for their rows,
-- the latest write and the latest recall. Readable: every agent when the key's default
-- allows reading, except those it names with "none"; otherwise only those it names.
-- $1 tenant_id uuid, $2 after text, $3 readable_by_default bool, $4 hidden text[],
-- $5 granted text[], $6 page_size int4
SELECT a.name, coalesce(m.memories, 0)::int AS memories, coalesce(e.episodes, 0)::int AS episodes,
       coalesce(m.locked, 0)::int AS locked,
       (coalesce(jm.pending, 0) + coalesce(je.pending, 0))::int AS pending_embeddings,
       greatest(m.last_write, e.last_write) AS last_write, m.last_recall
FROM agents a
LEFT JOIN LATERAL (
    SELECT count(*) AS memories, count(*) FILTER (WHERE x.locked) AS locked,
           max(x.updated_at) AS last_write, max(x.last_recalled_at) AS last_recall
    FROM memories x WHERE x.tenant_id = $1 AND x.agent_id = a.id
) m ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS episodes, max(y.created_at) AS last_write
    FROM episodes y WHERE y.tenant_id = $1 AND y.agent_id = a.id
) e ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS pending FROM embedding_jobs j
    JOIN memories x ON x.tenant_id = j.tenant_id AND x.id = j.item_id
    WHERE j.tenant_id = $1 AND j.item_kind = 'mem' AND x.agent_id = a.id
) jm ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS pending FROM embedding_jobs j
    JOIN episodes y ON y.tenant_id = j.tenant_id AND y.id = j.item_id
    WHERE j.tenant_id = $1 AND j.item_kind = 'ep' AND y.agent_id = a.id
) je ON true
WHERE a.tenant_id = $1 AND a.name > $2
  AND (($3 AND NOT a.name = ANY ($4)) OR a.name = ANY ($5))
ORDER BY a.name
LIMIT $6

-- console_memories --
-- One page of an agent's memories, newest first, before a (created_at, id) cursor: the
-- first characters of each text and its length, its axes, source, lock and whether its
-- vector has landed (memories_agent_recent).
-- $1 tenant_id uuid, $2 agent text, $3 before_at timestamptz, $4 before_id int8,
-- $5 preview_chars int4, $6 page_size int4
SELECT m.id, left(m.content, $5) AS preview, char_length(m.content) AS chars, m.project_id,
       m.channel, m.source, m.timestamp_text, m.created_at, m.locked,
       m.embedding IS NOT NULL AS embedded
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
WHERE m.tenant_id = $1 AND a.tenant_id = $1 AND a.name = $2
  AND (m.created_at, m.id) < ($3, $4)
ORDER BY m.created_at DESC, m.id DESC
LIMIT $6

-- console_episodes --
-- One page of an agent's episodes, newest first, before a (created_at, id) cursor, like
-- console_memories (episodes have no source and no lock; their time is start_time).
-- $1 tenant_id uuid, $2 agent text, $3 before_at timestamptz, $4 before_id int8,
-- $5 preview_chars int4, $6 page_size int4
SELECT e.id, left(e.summary, $5) AS preview, char_length(e.summary) AS chars, e.project_id,
       e.channel, '{}'::jsonb AS source, coalesce(e.start_time, '') AS timestamp_text,
       e.created_at, false AS locked, e.embedding IS NOT NULL AS embedded
FROM episodes e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE e.tenant_id = $1 AND a.tenant_id = $1 AND a.name = $2
  AND (e.created_at, e.id) < ($3, $4)
ORDER BY e.created_at DESC, e.id DESC
LIMIT $6

-- console_memory --
-- One memory of an agent, whole, for the console's record page: its text, axes, source,
-- metadata, times, lock, recall statistics and embedding state. No row: no such memory of
-- that agent in this tenant.
-- $1 tenant_id uuid, $2 agent text, $3 id int8
SELECT m.id, m.content AS text, m.project_id, m.channel, m.msg_id, m.source, m.metadata,
       m.timestamp_text, m.created_at, m.updated_at, m.locked, m.recall_count,
       m.last_recalled_at, m.embedding IS NOT NULL AS embedded, m.embedding_model,
       EXISTS (SELECT 1 FROM embedding_jobs j
               WHERE j.tenant_id = $1 AND j.item_kind = 'mem' AND j.item_id = m.id) AS queued
FROM memories m
JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
WHERE m.tenant_id = $1 AND a.tenant_id = $1 AND a.name = $2 AND m.id = $3

-- console_episode --
-- One episode of an agent, whole, like console_memory (its text is the summary and the
-- keywords; episodes have no lock, source, metadata or recall statistics).
-- $1 tenant_id uuid, $2 agent text, $3 id int8
SELECT e.id, e.summary || CASE WHEN e.keywords <> '' THEN E'\n\nKeywords: ' || e.keywords
                               ELSE '' END AS text,
       e.project_id, e.channel, '' AS msg_id, '{}'::jsonb AS source, '{}'::jsonb AS metadata,
       coalesce(e.start_time, '') AS timestamp_text, e.created_at, e.created_at AS updated_at,
       false AS locked, 0 AS recall_count, NULL::timestamptz AS last_recalled_at,
       e.embedding IS NOT NULL AS embedded, e.embedding_model,
       EXISTS (SELECT 1 FROM embedding_jobs j
               WHERE j.tenant_id = $1 AND j.item_kind = 'ep' AND j.item_id = e.id) AS queued
FROM episodes e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE e.tenant_id = $1 AND a.tenant_id = $1 AND a.name = $2 AND e.id = $3
