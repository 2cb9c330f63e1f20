-- recall_cue[dim] --
-- The cue arm of a recall with a time cue (docs/tools.md, "Time cues"): the memories and
-- episodes whose own time lies in the period [:start, :end) (a memory's parsed
-- timestamp; an episode's start_time when it parses, else created_at), under the
-- recall's own isolation (recall_scope) and source filter, each list :depth deep: the
-- period's memories nearest the query vector (exact, over its newest 10,000 embedded
-- memories, at least :floor), its memories holding a query word (or, for an empty query,
-- its newest by their own time), and its episodes likewise. One statement per stage;
-- the caller merges the lists by reciprocal rank and applies exclude_contents. Rows come
-- back as recall_found gives them. Shapes as recall_lexical (project / channel / source
-- lines dropped when their filter is off).
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :source_pattern
-- source_id LIKE pattern text (NULL = none), :start and :end the period timestamptz,
-- :vector query vector (NULL = none), :floor cosine floor float8, :tsquery text (NULL =
-- none), :lexemes its words text[], :patterns substring LIKE patterns text[], :recency
-- empty query boolean, :episodes eligible boolean, :depth rows per list int
-- :as_of timestamptz, the instant an as_of recall reads (in that shape only) -- shape: as_of
WITH typing AS (
    SELECT :project_id::text, :channel::text, :source_pattern::text -- shape: typing
), {part:recall_scope}, {part:cue_english}, period_memories AS MATERIALIZED (
    -- The period's memories in scope, read once (small columns only; content and
    -- vectors are fetched by primary key for the rows a list keeps).
    SELECT m.id, m.created_at, m.timestamp_at, m.content_tsv, m.content_tsv_en, m.embedding_dim
    FROM scoped_memories m
    WHERE m.timestamp_at >= :start::timestamptz AND m.timestamp_at < :end::timestamptz
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
), period_vectors AS MATERIALIZED (
    SELECT p.id FROM period_memories p
    WHERE :vector::vector IS NOT NULL AND p.embedding_dim = {dim}
    ORDER BY p.created_at DESC, p.id DESC
    LIMIT 10000
), vec_mem AS (
    SELECT v.id, v.score, row_number() OVER (ORDER BY v.score DESC, v.id DESC) AS position
    FROM (SELECT p.id, -(m.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
          FROM period_vectors p JOIN memories m ON m.tenant_id = :tenant_id AND m.id = p.id) v
    WHERE v.score >= :floor::float8
    ORDER BY v.score DESC, v.id DESC
    LIMIT :depth::int
), text_mem AS (
    SELECT x.id, x.score, row_number() OVER (ORDER BY x.score DESC, x.id DESC) AS position
    FROM (SELECT p.id,
                 ts_rank_cd(p.content_tsv, to_tsquery('simple', coalesce(:tsquery, '')), 1)
                 + coalesce(ts_rank_cd(p.content_tsv_en, (SELECT query FROM english), 1), 0)
                 + (SELECT count(*) FROM unnest(:patterns::text[]) q, memories x
                    WHERE x.tenant_id = :tenant_id AND x.id = p.id AND x.content ILIKE q)::float8
                 AS score
          FROM period_memories p
          WHERE NOT :recency
            AND ((:tsquery::text IS NOT NULL
                  AND (p.content_tsv @@ to_tsquery('simple', :tsquery)
                       OR p.content_tsv_en @@ (SELECT query FROM english)))
                 OR (cardinality(:patterns::text[]) > 0
                     AND EXISTS (SELECT 1 FROM memories x
                                 WHERE x.tenant_id = :tenant_id AND x.id = p.id
                                   AND x.content ILIKE ANY (:patterns::text[]))))) x
    ORDER BY x.score DESC, x.id DESC
    LIMIT :depth::int
), recent_mem AS (
    SELECT p.id, NULL::float8 AS score,
           row_number() OVER (ORDER BY p.timestamp_at DESC, p.id DESC) AS position
    FROM period_memories p
    WHERE :recency
    ORDER BY p.timestamp_at DESC, p.id DESC
    LIMIT :depth::int
), {part:cue_episodes}, {part:cue_hits}, {part:recall_found}
SELECT f.channel, f.kind, f.id, f.score, f.position, f.content, f.source, f.timestamp_text,
       f.msg_id, f.created_at, f.resolved
FROM found f

-- recall_cue_wide[dim] --
-- recall_cue for a wide period (more than CUE_NARROW_ROWS memories of the agent, counted
-- by cue_period_size; docs/tools.md, "Time cues"), where reading the period is reading a
-- large part of the agent: the same lists, found through the indexes recall's own lists
-- use, filtered to the period. The vector list walks the HNSW index as recall_vectors
-- does (pgvector's iterative scan, set per transaction: approximate, over every embedded
-- memory of the period); when that walk gives up before :depth rows (a small agent in a
-- large table: hnsw.max_scan_tuples), the exact list of recall_cue takes its place. The
-- text list reads the rows holding a query word through the full-text and trigram GIN
-- indexes and ranks them as recall_cue does (the same list); the newest, through
-- memories_agent_time backwards. Episodes as recall_cue. Arguments and shapes as
-- recall_cue.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :source_pattern
-- source_id LIKE pattern text (NULL = none), :start and :end the period timestamptz,
-- :vector query vector (NULL = none), :floor cosine floor float8, :tsquery text (NULL =
-- none), :lexemes its words text[], :patterns substring LIKE patterns text[], :recency
-- empty query boolean, :episodes eligible boolean, :depth rows per list int
-- :as_of timestamptz, the instant an as_of recall reads (in that shape only) -- shape: as_of
WITH typing AS (
    SELECT :project_id::text, :channel::text, :source_pattern::text -- shape: typing
), {part:recall_scope}, {part:cue_english}, vec_near AS MATERIALIZED (
    SELECT m.id, -(m.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM scoped_memories m
    WHERE :vector::vector IS NOT NULL AND m.embedding_dim = {dim}
      AND m.timestamp_at >= :start::timestamptz AND m.timestamp_at < :end::timestamptz
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    ORDER BY m.embedding::vector({dim}) <#> :vector::vector({dim})
    -- Four times the list's depth, re-ranked by exact score in vec_mem: the iterative
    -- scan returns rows in relaxed order, so its first :depth need not hold the nearest.
    LIMIT 4 * :depth::int
), vec_exact AS MATERIALIZED (
    -- recall_cue's exact list, read only when the index walk came back short.
    SELECT p.id, -(p.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM (SELECT m.id, m.embedding FROM scoped_memories m
          WHERE :vector::vector IS NOT NULL AND m.embedding_dim = {dim}
            AND (SELECT count(*) FROM vec_near) < :depth::int
            AND m.timestamp_at >= :start::timestamptz AND m.timestamp_at < :end::timestamptz
            AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
          ORDER BY m.created_at DESC, m.id DESC
          LIMIT 10000) p
), vec_mem AS (
    SELECT v.id, v.score, row_number() OVER (ORDER BY v.score DESC, v.id DESC) AS position
    FROM (SELECT id, score FROM vec_near WHERE (SELECT count(*) FROM vec_near) >= :depth::int
          UNION ALL
          SELECT id, score FROM vec_exact) v
    WHERE v.score >= :floor::float8
    ORDER BY v.score DESC, v.id DESC
    LIMIT :depth::int
), text_mem AS (
    SELECT x.id, x.score, row_number() OVER (ORDER BY x.score DESC, x.id DESC) AS position
    FROM (SELECT m.id,
                 ts_rank_cd(m.content_tsv, to_tsquery('simple', coalesce(:tsquery, '')), 1)
                 + coalesce(ts_rank_cd(m.content_tsv_en, (SELECT query FROM english), 1), 0)
                 + (SELECT count(*) FROM unnest(:patterns::text[]) q WHERE m.content ILIKE q)::float8
                 AS score
          FROM scoped_memories m
          WHERE NOT :recency
            AND m.timestamp_at >= :start::timestamptz AND m.timestamp_at < :end::timestamptz
            AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
            AND ((:tsquery::text IS NOT NULL
                  AND (m.content_tsv @@ to_tsquery('simple', :tsquery)
                       OR m.content_tsv_en @@ (SELECT query FROM english)))
                 OR (cardinality(:patterns::text[]) > 0
                     AND m.content ILIKE ANY (:patterns::text[])))) x
    ORDER BY x.score DESC, x.id DESC
    LIMIT :depth::int
), recent_mem AS (
    SELECT m.id, NULL::float8 AS score,
           row_number() OVER (ORDER BY m.timestamp_at DESC, m.id DESC) AS position
    FROM scoped_memories m
    WHERE :recency
      AND m.timestamp_at >= :start::timestamptz AND m.timestamp_at < :end::timestamptz
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    ORDER BY m.timestamp_at DESC, m.id DESC
    LIMIT :depth::int
), {part:cue_episodes}, {part:cue_hits}, {part:recall_found}
SELECT f.channel, f.kind, f.id, f.score, f.position, f.content, f.source, f.timestamp_text,
       f.msg_id, f.created_at, f.resolved
FROM found f

-- cue_period_size --
-- How many memories of the agent have their own time in [$3, $4), counted through
-- memories_agent_time up to $5 + 1 (an index walk that stops there): whether a cue's
-- period is narrow (recall_cue) or wide (recall_cue_wide). The agent's, before the
-- recall's project, channel and source filters: the count sizes the read, not the answer.
-- $1 tenant_id uuid, $2 agent name text, $3 start timestamptz, $4 end timestamptz, $5 cap int
SELECT count(*)::int FROM (
    SELECT 1 FROM memories m
    WHERE m.tenant_id = $1
      AND m.agent_id = (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
      AND m.timestamp_at >= $3 AND m.timestamp_at < $4
    LIMIT $5 + 1
) p

-- part: cue_episodes --
-- The cue's episode lists (both shapes): the period's episodes, nearest the query vector
-- and holding a query word (or, for an empty query, the newest).
period_episodes AS MATERIALIZED (
    -- An episode's own time as everywhere else (part episode_valid_from: start_time as the
    -- model reads it, naive = UTC), else created_at. Only text the type accepts is cast.
    SELECT e.id, e.search_tsv, e.summary, e.keywords, e.embedding, e.embedding_dim, t.at
    FROM scoped_episodes e
    CROSS JOIN LATERAL (
        SELECT coalesce((SELECT {part:episode_valid_from} FROM (SELECT e.start_time, e.created_at) x),
                        e.created_at) AS at) t
    WHERE :episodes AND t.at >= :start::timestamptz AND t.at < :end::timestamptz
), vec_ep AS (
    SELECT v.id, v.score, row_number() OVER (ORDER BY v.score DESC, v.id DESC) AS position
    FROM (SELECT e.id, -(e.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
          FROM period_episodes e
          WHERE :vector::vector IS NOT NULL AND e.embedding_dim = {dim}) v
    WHERE v.score >= :floor::float8
    ORDER BY v.score DESC, v.id DESC
    LIMIT :depth::int
), text_ep AS (
    SELECT x.id, x.score, row_number() OVER (ORDER BY x.score DESC NULLS LAST, x.at DESC, x.id DESC) AS position
    FROM (SELECT e.id, e.at,
                 CASE WHEN :recency THEN NULL
                      ELSE ts_rank_cd(e.search_tsv, to_tsquery('simple', coalesce(:tsquery, '')), 1)
                           + (SELECT count(*) FROM unnest(:patterns::text[]) p
                              WHERE (e.summary || ' ' || e.keywords) ILIKE p)::float8 END AS score
          FROM period_episodes e
          WHERE :recency
             OR (:tsquery::text IS NOT NULL AND e.search_tsv @@ to_tsquery('simple', :tsquery))
             OR (e.summary || ' ' || e.keywords) ILIKE ANY (:patterns::text[])) x
    ORDER BY x.score DESC NULLS LAST, x.at DESC, x.id DESC
    LIMIT :depth::int
)

-- part: cue_hits --
-- The cue's lists as hits, one channel each.
hits AS (
    SELECT 'cue_vector' AS channel, 'mem' AS kind, id, score, position FROM vec_mem
    UNION ALL
    SELECT 'cue_text', 'mem', id, score, position FROM text_mem
    UNION ALL
    SELECT 'cue_recent', 'mem', id, score, position FROM recent_mem
    UNION ALL
    SELECT 'cue_episode_vector', 'ep', id, score, position FROM vec_ep
    UNION ALL
    SELECT 'cue_episode_text', 'ep', id, score, position FROM text_ep
)

-- part: cue_english --
-- The query's words as one English tsquery (their Snowball stems, OR'ed; lexemes cast,
-- never parsed), for the word lists of both shapes.
english AS MATERIALIZED (
    SELECT (SELECT string_agg(quote_literal(u.lexeme), ' | ')
            FROM unnest(:lexemes::text[]) AS t(term)
            CROSS JOIN LATERAL unnest(to_tsvector('english'::regconfig, t.term)) AS u)::tsquery
               AS query
)
