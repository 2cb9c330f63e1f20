-- recall_lexical --
-- The lexical half of a recall (docs/architecture.md, "Recall"), in one round trip that
-- needs no query vector, so it runs while the query is being embedded: BM25 full text
-- over memories (the language-neutral and the stemmed English vector, plus trigram
-- substrings for CJK and identifiers), full text over episodes, the newest memories for
-- empty queries, and one 'meta' row: the pool size (capped at 500: the gate needs no
-- more), the episode boundary, the profile, the calibrated gate, the advisory state, and
-- what the second-stage text features (coverage, phrase, a shared word: on every row)
-- were computed from, so ``recall_vectors`` computes the same for the rows only vectors
-- find. BM25 statistics are the agent's own, kept on write (lexicon_terms plus the
-- backlog in lexicon_changes, migration 0007). Candidates: every row holding one of the
-- rarest query terms, rarest first while their postings add up to at most :budget rows
-- (exact BM25 over them); when those are fewer than :depth, rows holding the next
-- rarest term top them up to :depth (a query of common words reads one posting list).
-- Scope as the recall_scope part; source_id is a prefix on memories. Shapes
-- (``sql.shaped``; docs/contributing.md, "Where a new thing goes"): a
-- line tagged ``shape: project`` / ``channel`` / ``source`` is dropped when its filter
-- is off (:project_id NULL, :channel '', :source_pattern NULL), :depth and :budget are
-- written in; the ``typing`` CTE, never read, keeps the parameter types. As written
-- here, with every line, it is the statement of every shape.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :source_pattern
-- source_id LIKE pattern text (NULL = none), :tsquery text (NULL = none), :patterns
-- substring LIKE patterns text[] (empty = none), :depth lexical depth int, :episodes
-- eligible boolean, :recency listing boolean, :lexemes the words of :tsquery text[],
-- :confidence scoring on boolean (adds the memory time span to meta), :query text (its
-- English vector orders the stems for the phrase feature), :budget exhaustive postings
-- budget int, :simple_weight and :english_weight BM25 weights of the simple and the
-- English vector float8 (0 = no stemming)
-- :as_of timestamptz, the instant an as_of recall reads (in that shape only) -- shape: as_of
WITH typing AS (
    SELECT :project_id::text, :channel::text, :source_pattern::text, :depth::int, :budget::int -- shape: typing
), {part:recall_scope}, words AS MATERIALIZED (
    -- The query's terms per configuration: its words (simple) and their Snowball stems
    -- (english; none for an English stop word). Lexemes are cast, never parsed, into a
    -- tsquery, so a stem is not stemmed again and no input can make a tsquery invalid.
    SELECT DISTINCT w.config, w.term, quote_literal(w.term)::tsquery AS query,
           CASE WHEN w.config = 'simple'::regconfig THEN :simple_weight::float8 ELSE :english_weight::float8 END
               AS weight
    FROM (SELECT 'simple'::regconfig AS config, t.term
          FROM unnest(:lexemes::text[]) AS t(term) WHERE :tsquery::text IS NOT NULL
          UNION ALL
          SELECT 'english'::regconfig, u.lexeme
          FROM unnest(:lexemes::text[]) AS t(term)
          CROSS JOIN LATERAL unnest(to_tsvector('english'::regconfig, t.term)) AS u
          WHERE :tsquery::text IS NOT NULL AND :english_weight::float8 > 0) w
), backlog AS MATERIALIZED (
    SELECT c.sign, c.simple, c.english FROM lexicon_changes c
    WHERE c.tenant_id = :tenant_id AND c.agent_id = (SELECT id FROM agent) AND :tsquery::text IS NOT NULL
), totals AS MATERIALIZED (
    -- Memories and mean vector length per configuration (folded plus backlog).
    SELECT g.config,
           greatest(coalesce(t.df, 0) + coalesce(b.docs, 0), 1)::float8 AS docs,
           greatest((coalesce(t.len, 0) + coalesce(b.len, 0))::float8
                    / greatest(coalesce(t.df, 0) + coalesce(b.docs, 0), 1), 1) AS avgdl
    FROM (VALUES ('simple'::regconfig), ('english'::regconfig)) AS g(config)
    LEFT JOIN lexicon_terms t
        ON t.tenant_id = :tenant_id AND t.agent_id = (SELECT id FROM agent) AND t.config = g.config
       AND t.term = ''
    LEFT JOIN LATERAL (
        SELECT sum(k.sign) AS docs,
               sum(k.sign * length(CASE WHEN g.config = 'simple'::regconfig
                                        THEN k.simple ELSE k.english END)) AS len
        FROM backlog k
        WHERE g.config = 'simple'::regconfig OR k.english IS NOT NULL) b ON true
    WHERE :tsquery::text IS NOT NULL
), stats AS MATERIALIZED (
    -- Each query term's document frequency in the agent and its BM25 IDF; ``running``
    -- orders terms rarest first and adds up their postings.
    SELECT w.config, w.term, w.query, w.weight, d.df, k.avgdl,
           ln(1 + (k.docs - d.df + 0.5) / (d.df + 0.5)) AS idf,
           sum(d.df) OVER (ORDER BY d.df, w.config, w.term) AS running
    FROM words w
    JOIN totals k ON k.config = w.config
    CROSS JOIN LATERAL (
        SELECT greatest(coalesce((SELECT t.df FROM lexicon_terms t
                                  WHERE t.tenant_id = :tenant_id AND t.agent_id = (SELECT id FROM agent)
                                    AND t.config = w.config AND t.term = w.term), 0)
                        + coalesce((SELECT sum(b.sign) FROM backlog b
                                    WHERE CASE WHEN w.config = 'simple'::regconfig
                                               THEN b.simple ELSE b.english END @@ w.query),
                                   0), 0)::float8 AS df) d
), next_term AS MATERIALIZED (
    -- The rarest term beyond the postings budget: the top-up reads its postings only.
    SELECT s.config, s.term FROM stats s
    WHERE s.df > 0 AND s.running > :budget
    ORDER BY s.running, s.config, s.term
    LIMIT 1
), queries AS MATERIALIZED (
    SELECT (SELECT string_agg(s.term_query, ' | ') FROM (
                SELECT quote_literal(s.term) AS term_query FROM stats s
                WHERE s.config = 'simple'::regconfig AND s.df > 0 AND s.running <= :budget) s
           )::tsquery AS rare_simple,
           (SELECT string_agg(quote_literal(s.term), ' | ') FROM stats s
            WHERE s.config = 'english'::regconfig AND s.df > 0 AND s.running <= :budget)::tsquery
               AS rare_english,
           (SELECT string_agg(quote_literal(s.term), ' | ') FROM stats s
            WHERE s.config = 'simple'::regconfig AND s.df > 0)::tsquery AS any_simple,
           (SELECT string_agg(quote_literal(s.term), ' | ') FROM stats s
            WHERE s.config = 'english'::regconfig AND s.df > 0)::tsquery AS any_english,
           (SELECT quote_literal(n.term)::tsquery FROM next_term n
            WHERE n.config = 'simple'::regconfig) AS next_simple,
           (SELECT quote_literal(n.term)::tsquery FROM next_term n
            WHERE n.config = 'english'::regconfig) AS next_english
), fts_rare AS MATERIALIZED (
    SELECT m.id, m.content_tsv, m.content_tsv_en
    FROM scoped_memories m
    WHERE :tsquery::text IS NOT NULL
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
      AND (m.content_tsv @@ (SELECT rare_simple FROM queries)
           OR m.content_tsv_en @@ (SELECT rare_english FROM queries))
    LIMIT :budget::int
), fts_common AS MATERIALIZED (
    -- Starvation guard: rows holding the next rarest (common) query word fill up to the
    -- depth. One posting list: the union of every common word's postings cost 40 ms at
    -- 100k rows for three common words (the bitmaps are built whole before any LIMIT).
    SELECT m.id, m.content_tsv, m.content_tsv_en
    FROM scoped_memories m
    WHERE :tsquery::text IS NOT NULL
      AND (SELECT count(*) FROM fts_rare) < :depth
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
      AND (m.content_tsv @@ (SELECT next_simple FROM queries)
           OR m.content_tsv_en @@ (SELECT next_english FROM queries))
      AND m.id NOT IN (SELECT id FROM fts_rare)
    LIMIT :depth
), pattern_candidates AS MATERIALIZED (
    SELECT m.id, m.content_tsv, m.content_tsv_en
    FROM scoped_memories m
    WHERE cardinality(:patterns::text[]) > 0
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
      AND m.content ILIKE ANY (:patterns::text[])
    LIMIT 2000
), fts_pool AS (
    SELECT * FROM fts_rare
    UNION ALL
    SELECT * FROM fts_common
    UNION ALL
    SELECT * FROM pattern_candidates p
    WHERE p.id NOT IN (SELECT id FROM fts_rare) AND p.id NOT IN (SELECT id FROM fts_common)
), fts_mem AS (
    -- Okapi BM25 (k1 1.2, b 0.75) with binary term frequency over both vectors: each
    -- query term the row holds adds weight x IDF, length-normalised within its own
    -- configuration; plus one point per matched substring pattern.
    SELECT c.id,
           coalesce((SELECT sum(s.weight * s.idf * 2.2
                                / (1 + 1.2 * (0.25 + 0.75 * (CASE WHEN s.config = 'simple'::regconfig
                                                                  THEN length(c.content_tsv)
                                                                  ELSE length(c.content_tsv_en) END)
                                                           / s.avgdl)))
                     FROM stats s
                     WHERE CASE WHEN s.config = 'simple'::regconfig
                                THEN c.content_tsv ELSE c.content_tsv_en END @@ s.query), 0)
           + CASE WHEN cardinality(:patterns::text[]) > 0
                  THEN (SELECT count(*) FROM unnest(:patterns::text[]) p, memories x
                        WHERE x.tenant_id = :tenant_id AND x.id = c.id AND x.content ILIKE p)::float8
                  ELSE 0 END AS score
    FROM fts_pool c
    ORDER BY score DESC, c.id DESC
    LIMIT :depth
), fts_ep AS (
    SELECT e.id,
           ts_rank_cd(e.search_tsv, to_tsquery('simple', coalesce(:tsquery, '')), 1)
           + (SELECT count(*) FROM unnest(:patterns::text[]) p
              WHERE (e.summary || ' ' || e.keywords) ILIKE p)::float8
             / greatest(cardinality(:patterns::text[]), 1) AS score
    FROM scoped_episodes e
    WHERE :episodes
      AND ((:tsquery::text IS NOT NULL AND e.search_tsv @@ to_tsquery('simple', :tsquery))
           OR (e.summary || ' ' || e.keywords) ILIKE ANY (:patterns::text[]))
    ORDER BY score DESC, e.id DESC
    LIMIT :depth
), recent_mem AS (
    SELECT m.id, NULL::float8 AS score
    FROM scoped_memories m
    WHERE :recency
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT :depth
), hits AS (
    SELECT 'memory_text' AS channel, 'mem' AS kind, id, score,
           row_number() OVER (ORDER BY score DESC, id DESC) AS position
    FROM fts_mem
    UNION ALL
    SELECT 'episode_text', 'ep', id, score, row_number() OVER (ORDER BY score DESC, id DESC)
    FROM fts_ep
    UNION ALL
    SELECT 'recent', 'mem', id, score, row_number() OVER () FROM recent_mem
), stems AS MATERIALIZED (
    -- The query's English stems with their IDF, and consecutive stem pairs (in query
    -- order) as phrase queries at the query's own distance (``a <N> b``).
    SELECT s.term, s.query, s.idf, min(u.pos) AS pos
    FROM stats s
    LEFT JOIN LATERAL (SELECT p AS pos FROM unnest(to_tsvector('english'::regconfig, :query::text)) v
                       CROSS JOIN LATERAL unnest(v.positions) p WHERE v.lexeme = s.term) u ON true
    WHERE s.config = 'english'::regconfig
    GROUP BY s.term, s.query, s.idf
), phrases AS MATERIALIZED (
    SELECT format('%s <%s> %s', quote_literal(a.term), b.pos - a.pos, quote_literal(b.term))
               ::tsquery AS query
    FROM (SELECT term, pos, lead(term) OVER w AS next, lead(pos) OVER w AS next_pos
          FROM stems WHERE pos IS NOT NULL WINDOW w AS (ORDER BY pos, term)) a
    JOIN stems b ON b.term = a.next AND a.next_pos > a.pos
), calibration AS (
    SELECT c.vector_threshold, c.fused_gate, c.fused_gate_signal, c.agent_id
    FROM recall_calibration c
    WHERE c.tenant_id = :tenant_id AND (c.agent_id = (SELECT id FROM agent) OR c.agent_id IS NULL)
), {part:recall_found}
SELECT f.channel, f.kind, f.id, f.score, f.position, f.content, f.source, f.timestamp_text,
       f.msg_id, f.created_at, f.resolved, f.recall_count, f.last_recalled_at,
       NULL::jsonb AS meta,
       (SELECT sum(s.idf) FILTER (WHERE f.tsv_en @@ s.query) / nullif(sum(s.idf), 0)
        FROM stems s) AS coverage,
       (SELECT count(*) FILTER (WHERE f.tsv_en @@ p.query)::float8 / nullif(count(*), 0)
        FROM phrases p) AS phrase,
       coalesce(f.tsv @@ (SELECT any_simple FROM queries), false)
           OR coalesce(f.tsv_en @@ (SELECT any_english FROM queries), false)
           OR (cardinality(:patterns::text[]) > 0 AND f.content ILIKE ANY (:patterns::text[])) AS matched,
       NULL::text[] AS stem_queries, NULL::text[] AS stem_idfs, NULL::text[] AS phrase_queries,
       NULL::text AS any_simple, NULL::text AS any_english
FROM found f
UNION ALL
SELECT 'meta', 'meta', 0, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       jsonb_build_object(
           'span_oldest', CASE WHEN :confidence THEN (SELECT min(timestamp_at) FROM scoped_memories) END,
           'span_newest', CASE WHEN :confidence THEN (SELECT max(timestamp_at) FROM scoped_memories) END,
           'agent_exists', EXISTS (SELECT 1 FROM agent),
           'pool', (SELECT count(*) FROM (SELECT 1 FROM scoped_memories LIMIT 500) x)
                 + (SELECT count(*) FROM (SELECT 1 FROM scoped_episodes LIMIT 500) y),
           'boundary', (SELECT max(created_at) FROM scoped_episodes),
           'profile', (SELECT p.content FROM profiles p
                       WHERE p.tenant_id = :tenant_id AND p.agent_id = (SELECT id FROM agent)
                         AND p.user_id = ''),
           'agent_threshold', (SELECT vector_threshold FROM calibration WHERE agent_id IS NOT NULL),
           'tenant_threshold', (SELECT vector_threshold FROM calibration WHERE agent_id IS NULL),
           'agent_gate', (SELECT fused_gate FROM calibration WHERE agent_id IS NOT NULL),
           'agent_gate_signal',
               (SELECT fused_gate_signal FROM calibration WHERE agent_id IS NOT NULL),
           'tenant_gate', (SELECT fused_gate FROM calibration WHERE agent_id IS NULL),
           'tenant_gate_signal',
               (SELECT fused_gate_signal FROM calibration WHERE agent_id IS NULL),
           'advisory_state', (SELECT state FROM embedding_health WHERE tenant_id = :tenant_id),
           'advisory_long_sent',
               (SELECT long_form_sent FROM embedding_health WHERE tenant_id = :tenant_id)
       ),
       NULL, NULL, NULL,
       st.queries, st.idfs, ph.queries, q.any_simple::text, q.any_english::text
FROM (SELECT array_agg(s.query::text) AS queries, array_agg(s.idf::text) AS idfs
      FROM stems s) st,
     (SELECT array_agg(p.query::text) AS queries FROM phrases p) ph,
     queries q

-- recall_vectors[dim] --
-- The vector half of a recall (docs/architecture.md, "Recall"), run once the query is
-- embedded: nearest memories and episodes (HNSW, inner product on unit vectors), each
-- scored by its best vector, its own or a current passage's (docs/architecture.md,
-- "Passages": collapsed per record here; a passage cut from another text than the
-- record's is stale and never read). Episodes and passages are walked by HNSW only for an
-- agent with :walk_from of them or more, fewer are ranked exactly, none not read (part
-- walk_counts: an agent without passages reads none at all). With the same text
-- features ``recall_lexical`` gives its rows, computed from the terms it returned, plus
-- one 'cosine' row (its best as above) per lexical hit with a vector of this width
-- (hybrid fusion and the confidence backfill score rows found by words alone by it).
-- Every row also says which current passage scored best (part_start, part_end in the
-- record's text, part_cosine; NULL when none did): the answer's excerpt may come from it
-- (docs/tools.md, "Response economy"); and how many passages the record has (parts, NULL
-- for none: the chances its best cosine had, for the length-neutral score of
-- docs/architecture.md, "Passages"; a PK probe per row found).
-- Scope and shapes as ``recall_lexical`` (:depth, the vector depth, is written in).
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :source_pattern
-- source_id LIKE pattern text (NULL = none), :vector query vector, :episodes eligible
-- boolean, :passages read passages boolean, :walk_from int (the agent's episodes or passages
-- from which the HNSW walk finds them), :depth vector depth int, :memory_ids memory
-- ids of the lexical hits, :episode_ids their episode ids, :stems stem queries and :idfs
-- their IDFs (in ``recall_lexical``'s order, so coverage sums alike), :phrases phrase
-- queries, all text[]; :any_simple any-word query of the simple vector text,
-- :any_english of the English vector text, :patterns substring LIKE patterns text[].
-- Ids and IDFs travel back as the text ``recall_lexical`` wrote them (float8 text is
-- exact: shortest round-trip digits), so no value is re-encoded on the way.
-- :as_of timestamptz, the instant an as_of recall reads (in that shape only) -- shape: as_of
WITH typing AS (
    SELECT :project_id::text, :channel::text, :source_pattern::text, :depth::int -- shape: typing
), {part:recall_scope}, {part:walk_counts}, vec_mem_own AS (
    SELECT m.id, -(m.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM scoped_memories m
    WHERE :vector::vector IS NOT NULL AND m.embedding_dim = {dim}
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    ORDER BY m.embedding::vector({dim}) <#> :vector::vector({dim})
    LIMIT :depth::int
), vec_ep_own AS (
    (SELECT e.id, -(e.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
     FROM scoped_episodes e
     WHERE (SELECT episodes FROM walk_counts) >= :walk_from::int AND e.embedding_dim = {dim}
     ORDER BY e.embedding::vector({dim}) <#> :vector::vector({dim})
     LIMIT :depth::int)
    UNION ALL
    (SELECT e.id, -(e.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
     FROM scoped_episodes e
     WHERE (SELECT episodes FROM walk_counts) BETWEEN 1 AND :walk_from::int - 1
       AND e.embedding_dim = {dim}
     ORDER BY score DESC, e.id DESC
     LIMIT :depth::int)
), vec_part AS (
    (SELECT p.item_kind AS kind, p.item_id AS id, p.source_hash, p.start_char, p.end_char,
            -(p.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
     FROM passages p
     WHERE (SELECT passages FROM walk_counts) >= :walk_from::int AND p.tenant_id = :tenant_id
       AND p.agent_id = (SELECT id FROM agent) AND p.embedding_dim = {dim}
       AND (p.item_kind = 'mem' OR :episodes)
     ORDER BY p.embedding::vector({dim}) <#> :vector::vector({dim})
     LIMIT 4 * :depth::int)
    UNION ALL
    (SELECT p.item_kind, p.item_id, p.source_hash, p.start_char, p.end_char,
            -(p.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
     FROM (SELECT q.* FROM passages q -- at most :walk_from, by passages_agent (no table scan)
           WHERE (SELECT passages FROM walk_counts) BETWEEN 1 AND :walk_from::int - 1
             AND q.tenant_id = :tenant_id AND q.agent_id = (SELECT id FROM agent) AND q.idx >= 0
           ORDER BY q.tenant_id, q.agent_id LIMIT :walk_from::int) p
     WHERE p.embedding_dim = {dim} AND (p.item_kind = 'mem' OR :episodes)
     ORDER BY score DESC, p.item_kind, p.item_id, p.idx
     LIMIT 4 * :depth::int)
), vec_part_current AS (
    SELECT p.kind, p.id, p.score, p.start_char, p.end_char FROM vec_part p JOIN scoped_memories m
        ON p.kind = 'mem' AND m.id = p.id AND m.content_hash = p.source_hash
    WHERE true
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    UNION ALL
    SELECT p.kind, p.id, p.score, p.start_char, p.end_char FROM vec_part p JOIN scoped_episodes e
        ON p.kind = 'ep' AND e.id = p.id
       AND decode(md5(episode_text(e.summary, e.keywords)), 'hex') = p.source_hash
), vec_mem AS (
    SELECT id, max(score) AS score FROM (
        SELECT id, score FROM vec_mem_own
        UNION ALL
        SELECT id, score FROM vec_part_current WHERE kind = 'mem'
    ) v GROUP BY id ORDER BY max(score) DESC, id DESC LIMIT :depth::int
), vec_ep AS (
    SELECT id, max(score) AS score FROM (
        SELECT id, score FROM vec_ep_own
        UNION ALL
        SELECT id, score FROM vec_part_current WHERE kind = 'ep'
    ) v GROUP BY id ORDER BY max(score) DESC, id DESC LIMIT :depth::int
), best_part AS (
    SELECT DISTINCT ON (kind, id) kind, id, start_char, end_char, score
    FROM vec_part_current ORDER BY kind, id, score DESC, start_char
), lexical_part AS (
    SELECT DISTINCT ON (p.item_kind, p.item_id, p.source_hash)
           p.item_kind AS kind, p.item_id AS id, p.source_hash, p.start_char, p.end_char,
           -(p.embedding::vector({dim}) <#> :vector::vector({dim})) AS score,
           count(*) OVER (PARTITION BY p.item_kind, p.item_id, p.source_hash) AS parts
    FROM passages p
    WHERE (SELECT passages FROM walk_counts) > 0 AND p.tenant_id = :tenant_id
      AND p.embedding_dim = {dim}
      AND ((p.item_kind = 'mem' AND p.item_id = ANY (:memory_ids::text[]::bigint[]))
           OR (p.item_kind = 'ep' AND p.item_id = ANY (:episode_ids::text[]::bigint[])))
    ORDER BY p.item_kind, p.item_id, p.source_hash,
             p.embedding::vector({dim}) <#> :vector::vector({dim}), p.start_char
), stems AS MATERIALIZED (
    SELECT u.query::tsquery AS query, u.idf
    FROM unnest(:stems::text[], :idfs::text[]::float8[]) AS u(query, idf)
), phrases AS MATERIALIZED (
    SELECT u.query::tsquery AS query FROM unnest(:phrases::text[]) AS u(query)
), hits AS (
    SELECT 'vector' AS channel, 'mem' AS kind, id, score,
           row_number() OVER (ORDER BY score DESC, id DESC) AS position FROM vec_mem
    UNION ALL
    SELECT 'vector', 'ep', id, score, row_number() OVER (ORDER BY score DESC, id DESC) FROM vec_ep
), {part:recall_found}
SELECT f.channel, f.kind, f.id, f.score, f.position, f.content, f.source, f.timestamp_text,
       f.msg_id, f.created_at, f.resolved, f.score AS cosine, f.recall_count, f.last_recalled_at,
       (SELECT sum(s.idf) FILTER (WHERE f.tsv_en @@ s.query) / nullif(sum(s.idf), 0)
        FROM stems s) AS coverage,
       (SELECT count(*) FILTER (WHERE f.tsv_en @@ p.query)::float8 / nullif(count(*), 0)
        FROM phrases p) AS phrase,
       coalesce(f.tsv @@ :any_simple::tsquery, false)
           OR coalesce(f.tsv_en @@ :any_english::tsquery, false)
           OR (cardinality(:patterns::text[]) > 0 AND f.content ILIKE ANY (:patterns::text[])) AS matched,
       b.start_char AS part_start, b.end_char AS part_end, b.score AS part_cosine,
       (SELECT max(q.idx) + 1 FROM passages q
        WHERE (SELECT passages FROM walk_counts) > 0 AND q.tenant_id = :tenant_id
          AND q.item_kind = f.kind AND q.item_id = f.id)
           AS parts
FROM found f LEFT JOIN best_part b ON b.kind = f.kind AND b.id = f.id
UNION ALL
SELECT 'cosine', 'mem', m.id, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
       greatest(-(m.embedding::vector({dim}) <#> :vector::vector({dim})), b.score),
       NULL, NULL, NULL, NULL, NULL, b.start_char, b.end_char, b.score, b.parts
FROM memories m LEFT JOIN lexical_part b
    ON b.kind = 'mem' AND b.id = m.id AND b.source_hash = m.content_hash
WHERE m.tenant_id = :tenant_id AND m.agent_id = (SELECT id FROM agent)
  AND m.id = ANY (:memory_ids::text[]::bigint[]) AND m.embedding_dim = {dim}
UNION ALL
SELECT 'cosine', 'ep', e.id, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
       greatest(-(e.embedding::vector({dim}) <#> :vector::vector({dim})), b.score),
       NULL, NULL, NULL, NULL, NULL, b.start_char, b.end_char, b.score, b.parts
FROM episodes e LEFT JOIN lexical_part b ON b.kind = 'ep' AND b.id = e.id
    AND b.source_hash = decode(md5(episode_text(e.summary, e.keywords)), 'hex')
WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
  AND e.id = ANY (:episode_ids::text[]::bigint[]) AND e.embedding_dim = {dim}
