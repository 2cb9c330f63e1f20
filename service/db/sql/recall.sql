-- recall_candidates[dim] --
-- Every retriever of one recall in a single round trip (spec §3.2): vector over
-- memories and over episodes (HNSW, inner product on unit vectors), full text over
-- memories (tsvector OR-query plus trigram substrings for CJK and identifiers),
-- full text over episodes, the newest memories for empty queries, and one 'meta' row
-- carrying the pool size (capped at 500: the gate only needs that much), the episode
-- boundary, the profile, the calibrated gate and the advisory state.
-- Scope: agent exact; project NULL = all, '' = global pool, X = X plus global pool;
-- channel '' = no filter, C = C plus channel-less rows; source_id prefix on memories.
-- $1 tenant_id uuid, $2 agent name text, $3 project_id text, $4 channel text,
-- $5 source_id LIKE pattern text (NULL = none), $6 query vector (NULL = no vector channel),
-- $7 tsquery text (NULL = none), $8 substring LIKE patterns text[] (empty = none),
-- $9 limit int, $10 episodes eligible boolean, $11 recency listing boolean,
-- $12 query lexemes text[] (the words of $7, for BM25 statistics),
-- $13 confidence scoring on boolean (adds the memory time span to meta)
WITH agent AS (
    SELECT id FROM agents WHERE tenant_id = $1 AND name = $2
), scoped_memories AS NOT MATERIALIZED (
    SELECT m.* FROM memories m
    WHERE m.tenant_id = $1 AND m.agent_id = (SELECT id FROM agent)
      AND ($3::text IS NULL OR m.project_id = $3 OR m.project_id = '')
      AND ($4::text = '' OR m.channel = $4 OR m.channel = '')
), scoped_episodes AS NOT MATERIALIZED (
    SELECT e.* FROM episodes e
    WHERE e.tenant_id = $1 AND e.agent_id = (SELECT id FROM agent)
      AND ($3::text IS NULL OR e.project_id = $3 OR e.project_id = '')
      AND ($4::text = '' OR e.channel = $4 OR e.channel = '')
), vec_mem AS (
    SELECT m.id, -(m.embedding::vector({dim}) <#> $6::vector({dim})) AS score
    FROM scoped_memories m
    WHERE $6::vector IS NOT NULL AND m.embedding_dim = {dim}
      AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
    ORDER BY m.embedding::vector({dim}) <#> $6::vector({dim})
    LIMIT $9
), vec_ep AS (
    SELECT e.id, -(e.embedding::vector({dim}) <#> $6::vector({dim})) AS score
    FROM scoped_episodes e
    WHERE $6::vector IS NOT NULL AND $10 AND e.embedding_dim = {dim}
    ORDER BY e.embedding::vector({dim}) <#> $6::vector({dim})
    LIMIT $9
), sample AS MATERIALIZED (
    -- BM25 statistics come from up to 2,000 of the agent's rows in scope (any 2,000: no
    -- ordering, so the read stops early): bounded whatever the corpus size, and a good
    -- estimate of how common each word is.
    SELECT m.content_tsv FROM scoped_memories m
    WHERE $7::text IS NOT NULL
    LIMIT 2000
), term_stats AS MATERIALIZED (
    SELECT t.term, q.query, (SELECT count(*) FROM sample s WHERE s.content_tsv @@ q.query) AS df
    FROM unnest($12::text[]) AS t(term)
    CROSS JOIN LATERAL (SELECT to_tsquery('simple', quote_literal(t.term)) AS query) q
), corpus AS MATERIALIZED (
    -- Candidate words: those in under 20% of the sample that occur at all (a word absent
    -- from a sample holding every row of the scope matches nothing); all words when no
    -- word qualifies, so a query of only common words still finds rows.
    SELECT greatest((SELECT count(*) FROM sample), 1) AS n,
           (SELECT avg(length(content_tsv)) FROM sample) AS avgdl,
           coalesce((SELECT string_agg(quote_literal(s.term), ' | ') FROM term_stats s
                     WHERE s.df * 5 < greatest((SELECT count(*) FROM sample), 1)
                       AND (s.df > 0 OR (SELECT count(*) FROM sample) >= 2000)), $7) AS words
), fts_candidates AS NOT MATERIALIZED (
    -- Rows matching a candidate word (GIN postings of this agent) or a substring pattern
    -- (trigram index), bounded so one recall never scores an unbounded set.
    SELECT m.id, m.content, m.content_tsv
    FROM scoped_memories m
    WHERE $7::text IS NOT NULL
      AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
      AND m.content_tsv @@ to_tsquery('simple', (SELECT words FROM corpus))
    LIMIT 2000
), pattern_candidates AS NOT MATERIALIZED (
    SELECT m.id, m.content, m.content_tsv
    FROM scoped_memories m
    WHERE cardinality($8::text[]) > 0
      AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
      AND m.content ILIKE ANY ($8::text[])
    LIMIT 2000
), fts_mem AS (
    -- BM25 with binary term frequency (chat-sized texts rarely repeat a word): the IDF of
    -- each matched word, length-normalised (b 0.75), plus one point per matched substring
    -- pattern (CJK trigrams, identifiers).
    SELECT c.id,
           coalesce((SELECT sum(ln(1 + (k.n - s.df + 0.5) / (s.df + 0.5)))
                     FROM term_stats s WHERE c.content_tsv @@ s.query), 0)
           * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length(c.content_tsv) / greatest(k.avgdl, 1)))
           + (SELECT count(*) FROM unnest($8::text[]) p WHERE c.content ILIKE p)::float8 AS score
    FROM (SELECT * FROM fts_candidates
          UNION ALL
          SELECT * FROM pattern_candidates p
          WHERE p.id NOT IN (SELECT id FROM fts_candidates)) c
    CROSS JOIN corpus k
    ORDER BY score DESC, c.id DESC
    LIMIT $9
), fts_ep AS (
    SELECT e.id,
           ts_rank_cd(e.search_tsv, to_tsquery('simple', coalesce($7, '')), 1)
           + (SELECT count(*) FROM unnest($8::text[]) p
              WHERE (e.summary || ' ' || e.keywords) ILIKE p)::float8
             / greatest(cardinality($8::text[]), 1) AS score
    FROM scoped_episodes e
    WHERE $10
      AND (($7::text IS NOT NULL AND e.search_tsv @@ to_tsquery('simple', $7))
           OR (e.summary || ' ' || e.keywords) ILIKE ANY ($8::text[]))
    ORDER BY score DESC, e.id DESC
    LIMIT $9
), recent_mem AS (
    SELECT m.id, NULL::float8 AS score
    FROM scoped_memories m
    WHERE $11 AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT $9
), hits AS (
    SELECT 'vector' AS channel, 'mem' AS kind, id, score,
           row_number() OVER (ORDER BY score DESC, id DESC) AS position FROM vec_mem
    UNION ALL
    SELECT 'vector', 'ep', id, score, row_number() OVER (ORDER BY score DESC, id DESC) FROM vec_ep
    UNION ALL
    SELECT 'memory_text', 'mem', id, score, row_number() OVER (ORDER BY score DESC, id DESC)
    FROM fts_mem
    UNION ALL
    SELECT 'episode_text', 'ep', id, score, row_number() OVER (ORDER BY score DESC, id DESC)
    FROM fts_ep
    UNION ALL
    SELECT 'recent', 'mem', id, score, row_number() OVER () FROM recent_mem
), calibration AS (
    SELECT c.vector_threshold, c.fused_gate, c.fused_gate_signal, c.agent_id
    FROM recall_calibration c
    WHERE c.tenant_id = $1 AND (c.agent_id = (SELECT id FROM agent) OR c.agent_id IS NULL)
)
SELECT h.channel, h.kind, h.id, h.score, h.position,
       m.content, m.source, m.timestamp_text, m.msg_id, m.created_at,
       NULL::boolean AS resolved,
       CASE WHEN $6::vector IS NOT NULL AND m.embedding_dim = {dim}
            THEN -(m.embedding::vector({dim}) <#> $6::vector({dim})) END AS cosine,
       m.recall_count, m.last_recalled_at, NULL::jsonb AS meta
FROM hits h JOIN memories m ON m.tenant_id = $1 AND m.id = h.id
WHERE h.kind = 'mem'
UNION ALL
SELECT h.channel, h.kind, h.id, h.score, h.position,
       '[Episode] ' || e.summary, '{"System": "episode"}'::jsonb,
       coalesce(e.start_time, to_char(e.created_at AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')),
       '', e.created_at, e.resolved,
       CASE WHEN $6::vector IS NOT NULL AND e.embedding_dim = {dim}
            THEN -(e.embedding::vector({dim}) <#> $6::vector({dim})) END,
       0, NULL, NULL::jsonb
FROM hits h JOIN episodes e ON e.tenant_id = $1 AND e.id = h.id
WHERE h.kind = 'ep'
UNION ALL
SELECT 'meta', 'meta', 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       jsonb_build_object(
           'span_oldest', CASE WHEN $13 THEN (SELECT min(timestamp_at) FROM scoped_memories) END,
           'span_newest', CASE WHEN $13 THEN (SELECT max(timestamp_at) FROM scoped_memories) END,
           'agent_exists', EXISTS (SELECT 1 FROM agent),
           'pool', (SELECT count(*) FROM (SELECT 1 FROM scoped_memories LIMIT 500) x)
                 + (SELECT count(*) FROM (SELECT 1 FROM scoped_episodes LIMIT 500) y),
           'boundary', (SELECT max(created_at) FROM scoped_episodes),
           'profile', (SELECT p.content FROM profiles p
                       WHERE p.tenant_id = $1 AND p.agent_id = (SELECT id FROM agent)
                         AND p.user_id = ''),
           'agent_threshold', (SELECT vector_threshold FROM calibration WHERE agent_id IS NOT NULL),
           'tenant_threshold', (SELECT vector_threshold FROM calibration WHERE agent_id IS NULL),
           'agent_gate', (SELECT fused_gate FROM calibration WHERE agent_id IS NOT NULL),
           'agent_gate_signal',
               (SELECT fused_gate_signal FROM calibration WHERE agent_id IS NOT NULL),
           'tenant_gate', (SELECT fused_gate FROM calibration WHERE agent_id IS NULL),
           'tenant_gate_signal',
               (SELECT fused_gate_signal FROM calibration WHERE agent_id IS NULL),
           'advisory_state', (SELECT state FROM embedding_health WHERE tenant_id = $1),
           'advisory_long_sent',
               (SELECT long_form_sent FROM embedding_health WHERE tenant_id = $1)
       )

-- bump_recall_stats --
-- Credit the memories a recall returned (confidence scoring only, spec §3.9).
-- $1 tenant_id uuid, $2 memory ids bigint[]
UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = now()
WHERE tenant_id = $1 AND id = ANY ($2::bigint[])

-- like_fallback --
-- Literal case-insensitive substring match of the whole query, newest first (spec
-- §3.2): used only when full text produced no query or no rows.
-- $1 tenant_id uuid, $2 agent name text, $3 project_id text, $4 channel text,
-- $5 source_id LIKE pattern text, $6 LIKE pattern text, $7 fetch limit int
SELECT m.id, m.content, m.source, m.timestamp_text, m.msg_id, m.created_at
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = (SELECT id FROM agents WHERE tenant_id = $1 AND name = $2)
  AND ($3::text IS NULL OR m.project_id = $3 OR m.project_id = '')
  AND ($4::text = '' OR m.channel = $4 OR m.channel = '')
  AND ($5::text IS NULL OR m.source ->> 'id' LIKE $5)
  AND m.content ILIKE $6
ORDER BY m.created_at DESC, m.id DESC
LIMIT $7

-- note_advisory --
-- Record the degraded-advisory state of a tenant and whether its long runbook was
-- shown; returns whether the long form had already been shown before this call.
-- $1 tenant_id uuid, $2 state text, $3 long form shown now boolean
WITH before AS (SELECT long_form_sent FROM embedding_health WHERE tenant_id = $1)
INSERT INTO embedding_health (tenant_id, state, long_form_sent, updated_at)
VALUES ($1, $2, $3, now())
ON CONFLICT (tenant_id) DO UPDATE
SET state = EXCLUDED.state,
    long_form_sent = embedding_health.long_form_sent OR EXCLUDED.long_form_sent,
    updated_at = now()
RETURNING coalesce((SELECT long_form_sent FROM before), false) AS already_sent
