-- calibration_state --
-- The tenant-wide row (agent_id NULL) and the named agent's row of recall_calibration,
-- whichever exist (0 to 2 rows); agent_row tells them apart.
-- $1 tenant_id uuid, $2 agent name text (NULL = the tenant-wide row only)
SELECT c.agent_id IS NOT NULL AS agent_row, c.vector_threshold, c.fused_gate,
       c.fused_gate_signal, c.beta, c.precision_label
FROM recall_calibration c
WHERE c.tenant_id = $1
  AND (c.agent_id IS NULL
       OR c.agent_id = agent_id_of($1, $2))

-- calibration_sample --
-- A random sample of at most $3 embedded memories (one agent, or every agent of the
-- tenant), kept to its most common width: the kept ids, the width, the most common
-- model, and how many rows were drawn before the width filter.
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 sample size int
WITH drawn AS MATERIALIZED (
    SELECT m.id, m.embedding_dim, m.embedding_model
    FROM memories m
    WHERE m.tenant_id = $1 AND m.embedding IS NOT NULL
      AND ($2::text IS NULL
           OR m.agent_id = agent_id_of($1, $2))
    ORDER BY random()
    LIMIT $3
), modal AS (
    SELECT d.embedding_dim FROM drawn d
    GROUP BY d.embedding_dim
    ORDER BY count(*) DESC, d.embedding_dim DESC
    LIMIT 1
), kept AS MATERIALIZED (
    SELECT d.id, d.embedding_model FROM drawn d
    WHERE d.embedding_dim = (SELECT embedding_dim FROM modal)
)
SELECT (SELECT count(*) FROM drawn) AS drawn,
       (SELECT embedding_dim FROM modal) AS dim,
       (SELECT k.embedding_model FROM kept k WHERE k.embedding_model IS NOT NULL
        GROUP BY k.embedding_model ORDER BY count(*) DESC LIMIT 1) AS model,
       coalesce((SELECT array_agg(k.id) FROM kept k), '{}') AS ids

-- calibration_pair_sims --
-- The dot products of every pair of the given memories, ascending: the null
-- distribution (vectors are unit length, so a dot product is the cosine). Bounded by
-- the sample: n rows give n * (n - 1) / 2 values; only the numbers are sorted.
-- $1 tenant_id uuid, $2 memory ids bigint[] (one width)
WITH kept AS MATERIALIZED (
    SELECT s.n, m.embedding
    FROM unnest($2::bigint[]) WITH ORDINALITY AS s(id, n)
    JOIN memories m ON m.tenant_id = $1 AND m.id = s.id
), pairs AS MATERIALIZED (
    SELECT -(a.embedding <#> b.embedding) AS sim
    FROM kept a JOIN kept b ON a.n < b.n
)
SELECT coalesce(array_agg(p.sim ORDER BY p.sim), '{}') AS sims FROM pairs p

-- calibration_nearest_sims --
-- For each of the given memories, its best dot product with another of them: the
-- nearest-neighbour positive proxy, used when too few same-session pairs exist.
-- $1 tenant_id uuid, $2 memory ids bigint[] (one width)
WITH kept AS MATERIALIZED (
    SELECT s.n, m.embedding
    FROM unnest($2::bigint[]) WITH ORDINALITY AS s(id, n)
    JOIN memories m ON m.tenant_id = $1 AND m.id = s.id
)
SELECT coalesce(array_agg(x.best), '{}') AS sims
FROM (SELECT (SELECT max(-(a.embedding <#> b.embedding)) FROM kept b WHERE b.n <> a.n) AS best
      FROM kept a) x

-- calibration_adjacent_sims --
-- Dot products of consecutive memories (ordered by the caller's parsed timestamp) that are
-- at most $5 minutes apart, among the newest $4 embedded memories of width $3: the
-- temporal positive proxy (rows of one session are related).
-- $1 tenant_id uuid, $2 agent name text (NULL = every agent), $3 width int,
-- $4 how many recent rows int, $5 window in minutes float8
WITH recent AS (
    SELECT m.id, m.embedding, m.timestamp_at
    FROM memories m
    WHERE m.tenant_id = $1 AND m.embedding_dim = $3 AND m.timestamp_at IS NOT NULL
      AND ($2::text IS NULL
           OR m.agent_id = agent_id_of($1, $2))
    ORDER BY m.timestamp_at DESC, m.id DESC
    LIMIT $4
), steps AS (
    SELECT -(r.embedding <#> lag(r.embedding) OVER w) AS sim,
           r.timestamp_at - lag(r.timestamp_at) OVER w AS gap
    FROM recent r
    WINDOW w AS (ORDER BY r.timestamp_at, r.id)
)
SELECT coalesce(array_agg(s.sim), '{}') AS sims
FROM steps s
WHERE s.gap <= make_interval(secs => $5::float8 * 60)

-- calibration_pseudo_queries --
-- At most $4 random embedded memories of one agent with width $3, a parsed timestamp and
-- non-blank content: the pseudo-queries of the fused-gate simulation (a stored vector is
-- the embedding of that row's content, so it stands in for the query's embedding).
-- $1 tenant_id uuid, $2 agent name text, $3 width int, $4 how many int
SELECT m.id, m.content, m.timestamp_at, m.embedding
FROM memories m
WHERE m.tenant_id = $1
  AND m.agent_id = agent_id_of($1, $2)
  AND m.embedding_dim = $3 AND m.timestamp_at IS NOT NULL AND btrim(m.content) <> ''
ORDER BY random()
LIMIT $4

-- save_calibration --
-- Store a calibration of the tenant (agent NULL) or of one existing agent: the vector
-- threshold, the fused gate (the stored gate and signal are kept when :fused_gate is NULL),
-- the embedding fingerprint and the report; with :set_beta also the precision override
-- (:beta NULL clears it). Returns one row when written, none when the agent no longer
-- exists.
-- :tenant_id uuid, :agent name text (NULL = tenant-wide), :vector_threshold vector
-- threshold float8,
-- :fused_gate fused gate float8, :fused_gate_signal fused gate signal text, :beta float8,
-- :set_beta set beta boolean,
-- :precision label text, :embedding_model embedding model text, :embedding_width embedding
-- width int,
-- :scoring_version scoring version text, :report jsonb
INSERT INTO recall_calibration AS c (
    tenant_id, agent_id, vector_threshold, fused_gate, fused_gate_signal, beta,
    precision_label, embedding_model, embedding_dim, scoring_version, details,
    calibrated_at, updated_at)
SELECT :tenant_id, owner.id, :vector_threshold::float8, :fused_gate::float8, :fused_gate_signal::text,
       CASE WHEN :set_beta::boolean THEN :beta::float8 END, CASE WHEN :set_beta::boolean THEN :precision::text END,
       :embedding_model::text, :embedding_width::int, :scoring_version::text, :report::jsonb, now(), now()
FROM (SELECT NULL::bigint AS id WHERE :agent::text IS NULL
      UNION ALL
      SELECT a.id FROM agents a WHERE a.tenant_id = :tenant_id AND a.name = :agent) owner
ON CONFLICT ON CONSTRAINT recall_calibration_scope DO UPDATE
SET vector_threshold = EXCLUDED.vector_threshold,
    fused_gate = coalesce(EXCLUDED.fused_gate, c.fused_gate),
    fused_gate_signal = CASE WHEN EXCLUDED.fused_gate IS NULL THEN c.fused_gate_signal
                             ELSE EXCLUDED.fused_gate_signal END,
    beta = CASE WHEN :set_beta::boolean THEN EXCLUDED.beta ELSE c.beta END,
    precision_label = CASE WHEN :set_beta::boolean THEN EXCLUDED.precision_label
                           ELSE c.precision_label END,
    embedding_model = EXCLUDED.embedding_model,
    embedding_dim = EXCLUDED.embedding_dim,
    scoring_version = EXCLUDED.scoring_version,
    details = EXCLUDED.details,
    calibrated_at = EXCLUDED.calibrated_at,
    updated_at = now()
RETURNING c.agent_id
