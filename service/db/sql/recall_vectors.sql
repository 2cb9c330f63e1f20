-- recall_vectors[dim] --
-- The vector half of a recall (docs/architecture.md, "Recall"), run once the query is
-- embedded: nearest memories and episodes (HNSW, inner product on unit vectors), each
-- scored by its best vector, its own or a current passage's (docs/architecture.md,
-- "Passages": HNSW over the agent's passages, collapsed per record here; a passage cut
-- from another text than the record's is stale and never read), with the same text
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
-- boolean, :passages read passages boolean, :depth vector depth int, :memory_ids memory
-- ids of the lexical hits, :episode_ids their episode ids, :stems stem queries and :idfs
-- their IDFs (in ``recall_lexical``'s order, so coverage sums alike), :phrases phrase
-- queries, all text[]; :any_simple any-word query of the simple vector text,
-- :any_english of the English vector text, :patterns substring LIKE patterns text[].
-- Ids and IDFs travel back as the text ``recall_lexical`` wrote them (float8 text is
-- exact: shortest round-trip digits), so no value is re-encoded on the way.
WITH typing AS (
    SELECT :project_id::text, :channel::text, :source_pattern::text, :depth::int -- shape: typing
), {part:recall_scope}, vec_mem_own AS (
    SELECT m.id, -(m.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM scoped_memories m
    WHERE :vector::vector IS NOT NULL AND m.embedding_dim = {dim}
      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern) -- shape: source
    ORDER BY m.embedding::vector({dim}) <#> :vector::vector({dim})
    LIMIT :depth::int
), vec_ep_own AS (
    SELECT e.id, -(e.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM scoped_episodes e
    WHERE :vector::vector IS NOT NULL AND :episodes AND e.embedding_dim = {dim}
    ORDER BY e.embedding::vector({dim}) <#> :vector::vector({dim})
    LIMIT :depth::int
), vec_part AS (
    SELECT p.item_kind AS kind, p.item_id AS id, p.source_hash, p.start_char, p.end_char,
           -(p.embedding::vector({dim}) <#> :vector::vector({dim})) AS score
    FROM passages p
    WHERE :vector::vector IS NOT NULL AND :passages AND p.tenant_id = :tenant_id
      AND p.agent_id = (SELECT id FROM agent) AND p.embedding_dim = {dim}
      AND (p.item_kind = 'mem' OR :episodes)
    ORDER BY p.embedding::vector({dim}) <#> :vector::vector({dim})
    LIMIT 4 * :depth::int
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
    WHERE :passages AND p.tenant_id = :tenant_id AND p.embedding_dim = {dim}
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
        WHERE :passages AND q.tenant_id = :tenant_id AND q.item_kind = f.kind AND q.item_id = f.id)
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
