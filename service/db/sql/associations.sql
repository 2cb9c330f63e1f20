-- lock_agent_graph --
-- Serialize declarations of one agent (the alias rule "one entity per name among what a
-- reader sees" is checked, then written, under this lock). NO KEY UPDATE does not block
-- the KEY SHARE locks of foreign-key checks, so stores of the agent go on.
-- $1 tenant_id uuid, $2 agent_id bigint
SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE

-- record_of_agent --
-- Whether mem:N / ep:N is a record of this agent (any project or channel).
-- $1 tenant_id uuid, $2 agent_id bigint, $3 kind text ('mem' or 'ep'), $4 id bigint
SELECT EXISTS (
    SELECT 1 FROM memories
    WHERE $3::text = 'mem' AND tenant_id = $1 AND agent_id = $2 AND id = $4
    UNION ALL
    SELECT 1 FROM episodes
    WHERE $3::text = 'ep' AND tenant_id = $1 AND agent_id = $2 AND id = $4
)

-- resolve_entity --
-- The entity a normalized name or alias names for a writer of scope (project, channel):
-- the most specific visible scope first, (P,C), (P,''), ('',C), ('',''); with $6 only the
-- exact scope. NULL when none.
-- $1 tenant_id uuid, $2 agent_id bigint, $3 project_id text, $4 channel text, $5
-- normalized text, $6 exact_only boolean
SELECT e.id
FROM entities e
WHERE e.tenant_id = $1 AND e.agent_id = $2
  AND e.project_id IN ($3, '') AND e.channel IN ($4, '')
  AND (NOT $6 OR (e.project_id = $3 AND e.channel = $4))
  AND (e.normalized = $5 OR EXISTS (
        SELECT 1 FROM entity_aliases x
        WHERE x.tenant_id = $1 AND x.entity_id = e.id AND x.normalized = $5))
ORDER BY (e.project_id = $3) DESC, (e.channel = $4) DESC, e.id
LIMIT 1

-- upsert_entity --
-- Register an entity in the exact scope (or find the one a concurrent call registered):
-- its id and whether this call created it.
-- $1 tenant_id uuid, $2 agent_id bigint, $3 project_id text, $4 channel text, $5 name
-- text, $6 normalized text
INSERT INTO entities (tenant_id, agent_id, project_id, channel, name, normalized)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, agent_id, project_id, channel, normalized)
DO UPDATE SET name = entities.name
RETURNING id, (xmax = 0) AS created

-- alias_clash --
-- Whether a normalized alias already names another entity a reader of the scope sees
-- (by name or by alias).
-- $1 tenant_id uuid, $2 agent_id bigint, $3 project_id text, $4 channel text, $5
-- normalized text, $6 entity_id bigint (the entity taking the alias)
SELECT EXISTS (
    SELECT 1 FROM entities e
    WHERE e.tenant_id = $1 AND e.agent_id = $2 AND e.id <> $6
      AND e.project_id IN ($3, '') AND e.channel IN ($4, '')
      AND (e.normalized = $5 OR EXISTS (
            SELECT 1 FROM entity_aliases x
            WHERE x.tenant_id = $1 AND x.entity_id = e.id AND x.normalized = $5))
)

-- insert_alias --
-- Give an entity an alias (kept as written and normalized); a repeat is a no-op.
-- $1 tenant_id uuid, $2 entity_id bigint, $3 alias text, $4 normalized text
INSERT INTO entity_aliases (tenant_id, entity_id, alias, normalized)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING

-- insert_mention --
-- Record that a record mentions an entity; a repeat is a no-op.
-- $1 tenant_id uuid, $2 entity_id bigint, $3 ref kind text, $4 ref id bigint
INSERT INTO entity_mentions (tenant_id, entity_id, ref_kind, ref_id)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING

-- upsert_relation --
-- Declare a relation, or find the same one (identity: scope, both ends, normalized
-- predicate, anchor): its id, the same on every repeat.
-- :tenant_id uuid, :agent_id bigint, :project_id text, :channel text, :subject_kind text,
-- :subject_id bigint, :predicate text, :object_kind text, :object_id bigint,
-- :anchor_kind text, :anchor_id bigint
INSERT INTO relations (tenant_id, agent_id, project_id, channel, subject_kind, subject_id,
                       predicate, object_kind, object_id, anchor_kind, anchor_id)
VALUES (:tenant_id, :agent_id, :project_id, :channel, :subject_kind, :subject_id,
        :predicate, :object_kind, :object_id, :anchor_kind, :anchor_id)
ON CONFLICT (tenant_id, agent_id, project_id, channel, subject_kind, subject_id, predicate,
             object_kind, object_id, anchor_kind, anchor_id)
DO UPDATE SET predicate = relations.predicate
RETURNING id

-- retract_relations --
-- Delete relations of this agent by id; another agent's or an unknown id counts nothing.
-- $1 tenant_id uuid, $2 agent_id bigint, $3 ids bigint[]
WITH gone AS (
    DELETE FROM relations
    WHERE tenant_id = $1 AND agent_id = $2 AND id = ANY($3::bigint[])
    RETURNING 1
)
SELECT count(*) FROM gone

-- retract_mention --
-- Delete one mention whose entity belongs to this agent.
-- $1 tenant_id uuid, $2 agent_id bigint, $3 entity_id bigint, $4 ref kind text, $5 ref
-- id bigint
WITH gone AS (
    DELETE FROM entity_mentions m
    USING entities e
    WHERE m.tenant_id = $1 AND m.entity_id = $3 AND m.ref_kind = $4 AND m.ref_id = $5
      AND e.tenant_id = m.tenant_id AND e.id = m.entity_id AND e.agent_id = $2
    RETURNING 1
)
SELECT count(*) FROM gone

-- traverse --
-- The declared neighbourhood of an entity (docs/tools.md, "traverse"), in one statement:
-- the starts (readable entities whose name or alias is the normalized $3), a
-- breadth-first walk over readable entity-to-entity relations in both directions up to
-- $7 hops and 256 entities (each frontier entity's most recent 256 links at most, so a
-- hub of 100k relations costs an index range, not its degree), then the first $8
-- entities by hops, recency of the reaching relation and id, with their aliases, their
-- readable mentions (lowest id first, at most $8) and the relations among them (most
-- recent first, at most 256). Project NULL = all, '' = the global pool, X = X plus the
-- global pool; channel '' = no filter, C = C plus channel-less rows; a source pattern
-- keeps the memories whose source.id matches, and episodes only when a channel is given.
-- With $9 only relations declared at or before it are read (docs/tools.md, "Facts that
-- change": the graph as it stood then); NULL reads them all.
-- $1 tenant_id uuid, $2 agent name text, $3 normalized entity text, $4 project_id text,
-- $5 channel text, $6 source_pattern text, $7 max_hops int, $8 limit int, $9 as_of
-- timestamptz
WITH RECURSIVE agent AS (
    SELECT id FROM agents WHERE tenant_id = $1 AND name = $2
), visible AS NOT MATERIALIZED (
    SELECT e.id, e.name, e.normalized FROM entities e
    WHERE e.tenant_id = $1 AND e.agent_id = (SELECT id FROM agent)
      AND ($4::text IS NULL OR e.project_id = $4 OR e.project_id = '')
      AND ($5::text = '' OR e.channel = $5 OR e.channel = '')
), readable_relations AS NOT MATERIALIZED (
    SELECT r.* FROM relations r
    WHERE r.tenant_id = $1 AND r.agent_id = (SELECT id FROM agent)
      AND ($4::text IS NULL OR r.project_id = $4 OR r.project_id = '')
      AND ($5::text = '' OR r.channel = $5 OR r.channel = '')
      AND ($9::timestamptz IS NULL OR r.declared_at <= $9)
), starts AS (
    SELECT v.id FROM visible v
    WHERE v.normalized = $3 OR EXISTS (
        SELECT 1 FROM entity_aliases x
        WHERE x.tenant_id = $1 AND x.entity_id = v.id AND x.normalized = $3)
), walk (hops, frontier, stamps, seen) AS (
    SELECT 0, array_agg(id ORDER BY id), array_agg(NULL::timestamptz), array_agg(id ORDER BY id)
    FROM starts HAVING count(*) > 0
    UNION ALL
    SELECT w.hops + 1, n.next, n.stamps, w.seen || n.next
    FROM walk w, LATERAL (
        SELECT array_agg(t.there ORDER BY t.at DESC, t.there) AS next,
               array_agg(t.at ORDER BY t.at DESC, t.there) AS stamps
        FROM (
            SELECT l.there, max(l.at) AS at
            FROM unnest(w.frontier) f(id), LATERAL (
                (SELECT r.object_entity AS there, r.declared_at AS at
                 FROM readable_relations r
                 WHERE r.subject_entity = f.id AND r.object_entity IS NOT NULL
                   AND r.object_entity <> ALL(w.seen)
                   AND r.object_entity IN (SELECT id FROM visible)
                 ORDER BY r.declared_at DESC LIMIT 256)
                UNION ALL
                (SELECT r.subject_entity, r.declared_at
                 FROM readable_relations r
                 WHERE r.object_entity = f.id AND r.subject_entity IS NOT NULL
                   AND r.subject_entity <> ALL(w.seen)
                   AND r.subject_entity IN (SELECT id FROM visible)
                 ORDER BY r.declared_at DESC LIMIT 256)
            ) l
            GROUP BY l.there
            ORDER BY max(l.at) DESC, l.there
            LIMIT 256 - cardinality(w.seen)
        ) t
    ) n
    WHERE w.hops < $7 AND n.next IS NOT NULL
), reached AS (
    SELECT x.id, w.hops, x.at
    FROM walk w, unnest(w.frontier, w.stamps) x(id, at)
), everyone AS (
    SELECT coalesce(array_agg(id), '{}') AS ids FROM reached
), kept AS (
    SELECT r.id, r.hops, row_number() OVER (ORDER BY r.hops, r.at DESC NULLS FIRST, r.id) AS position
    FROM reached r
    ORDER BY position
    LIMIT $8
), mentioned AS (
    SELECT k.id, m.ref, m.total
    FROM kept k, LATERAL (
        SELECT array_agg(x.ref_kind || ':' || x.ref_id ORDER BY x.ref_id)
                   FILTER (WHERE x.n <= $8) AS ref,
               count(*) AS total
        FROM (
            SELECT mm.ref_kind, mm.ref_id, row_number() OVER (ORDER BY mm.ref_id) AS n
            FROM entity_mentions mm
            WHERE mm.tenant_id = $1 AND mm.entity_id = k.id
              AND (EXISTS (
                    SELECT 1 FROM memories m
                    WHERE m.tenant_id = $1 AND m.id = mm.memory_id
                      AND m.agent_id = (SELECT id FROM agent)
                      AND ($4::text IS NULL OR m.project_id = $4 OR m.project_id = '')
                      AND ($5::text = '' OR m.channel = $5 OR m.channel = '')
                      AND ($6::text IS NULL OR m.source ->> 'id' LIKE $6))
                OR EXISTS (
                    SELECT 1 FROM episodes e
                    WHERE e.tenant_id = $1 AND e.id = mm.episode_id
                      AND e.agent_id = (SELECT id FROM agent)
                      AND ($4::text IS NULL OR e.project_id = $4 OR e.project_id = '')
                      AND ($5::text = '' OR e.channel = $5 OR e.channel = '')
                      AND ($6::text IS NULL OR $5::text <> '')))
        ) x
    ) m
), linked AS (
    SELECT r.id, r.subject_entity, r.predicate, r.object_entity, r.declared_by, r.declared_at,
           r.anchor_kind, r.anchor_id
    FROM readable_relations r
    WHERE r.subject_entity IN (SELECT id FROM kept) AND r.object_entity IN (SELECT id FROM kept)
    ORDER BY r.declared_at DESC, r.id DESC
    LIMIT 257
)
SELECT
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
         'id', k.id, 'name', v.name, 'hops', k.hops,
         'aliases', (SELECT jsonb_agg(x.alias ORDER BY x.normalized) FROM entity_aliases x
                     WHERE x.tenant_id = $1 AND x.entity_id = k.id),
         'mentions', coalesce(to_jsonb(mm.ref), '[]'::jsonb),
         'mentions_total', coalesce(mm.total, 0)) ORDER BY k.position), '[]'::jsonb)
     FROM kept k JOIN visible v ON v.id = k.id LEFT JOIN mentioned mm ON mm.id = k.id)
        AS entities,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
         'id', l.id, 'subject', l.subject_entity, 'predicate', l.predicate,
         'object', l.object_entity, 'declared_by', l.declared_by,
         'declared_at', l.declared_at,
         'anchor_ref', CASE WHEN l.anchor_kind <> '' THEN l.anchor_kind || ':' || l.anchor_id END)
         ORDER BY l.declared_at DESC, l.id DESC), '[]'::jsonb)
     FROM linked l) AS relations,
    (SELECT count(*) FROM reached) AS reached,
    EXISTS (
        SELECT 1 FROM reached r, everyone e, LATERAL (
            SELECT 1 FROM readable_relations x
            WHERE x.subject_entity = r.id AND x.object_entity IS NOT NULL
              AND x.object_entity <> ALL(e.ids) AND x.object_entity IN (SELECT id FROM visible)
            UNION ALL
            SELECT 1 FROM readable_relations x
            WHERE x.object_entity = r.id AND x.subject_entity IS NOT NULL
              AND x.subject_entity <> ALL(e.ids) AND x.subject_entity IN (SELECT id FROM visible)
            LIMIT 1
        ) beyond
        WHERE r.hops = $7
    ) AS beyond_hops

-- graph_counts --
-- The declarations an export writes: entities, mentions and relations of one agent (NULL =
-- every agent of the tenant).
-- $1 tenant_id uuid, $2 agent_id bigint
SELECT
    (SELECT count(*) FROM entities e
     WHERE e.tenant_id = $1 AND ($2::bigint IS NULL OR e.agent_id = $2)) AS entities,
    (SELECT count(*) FROM entity_mentions m JOIN entities e
         ON e.tenant_id = m.tenant_id AND e.id = m.entity_id
     WHERE m.tenant_id = $1 AND ($2::bigint IS NULL OR e.agent_id = $2)) AS mentions,
    (SELECT count(*) FROM relations r
     WHERE r.tenant_id = $1 AND ($2::bigint IS NULL OR r.agent_id = $2)) AS relations

-- export_entities --
-- A batch of entities after id $3, with their aliases as written (by normalized form).
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = all), $3 after id bigint, $4 limit int
SELECT e.id, a.name AS agent_name, e.project_id, e.channel, e.name, e.declared_by,
       e.created_at,
       coalesce((SELECT array_agg(x.alias ORDER BY x.normalized) FROM entity_aliases x
                 WHERE x.tenant_id = $1 AND x.entity_id = e.id), '{}') AS aliases
FROM entities e
JOIN agents a ON a.tenant_id = e.tenant_id AND a.id = e.agent_id
WHERE e.tenant_id = $1 AND ($2::bigint IS NULL OR e.agent_id = $2) AND e.id > $3
ORDER BY e.id
LIMIT $4

-- export_mentions --
-- A batch of mentions after (entity $3, kind $4, id $5), by entity, kind and record id.
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = all), $3 after entity_id bigint, $4 after
-- kind text, $5 after ref id bigint, $6 limit int
SELECT m.entity_id, m.ref_kind, m.ref_id, m.declared_by, m.created_at
FROM entity_mentions m
JOIN entities e ON e.tenant_id = m.tenant_id AND e.id = m.entity_id
WHERE m.tenant_id = $1 AND ($2::bigint IS NULL OR e.agent_id = $2)
  AND (m.entity_id, m.ref_kind, m.ref_id) > ($3, $4, $5)
ORDER BY m.entity_id, m.ref_kind, m.ref_id
LIMIT $6

-- export_relations --
-- A batch of relations after id $3.
-- $1 tenant_id uuid, $2 agent_id bigint (NULL = all), $3 after id bigint, $4 limit int
SELECT r.id, a.name AS agent_name, r.project_id, r.channel, r.subject_kind, r.subject_id,
       r.predicate, r.object_kind, r.object_id, r.anchor_kind, r.anchor_id, r.declared_by,
       r.declared_at
FROM relations r
JOIN agents a ON a.tenant_id = r.tenant_id AND a.id = r.agent_id
WHERE r.tenant_id = $1 AND ($2::bigint IS NULL OR r.agent_id = $2) AND r.id > $3
ORDER BY r.id
LIMIT $4

-- record_by_key --
-- The id of an agent's memory (by content hash) or episode (by summary hash) in an exact
-- bucket: where an import finds the row a file's record became (inserted, or the
-- duplicate that was already there). NULL when there is none.
-- $1 tenant_id uuid, $2 kind text ('mem' or 'ep'), $3 agent_id bigint, $4 project_id text,
-- $5 channel text, $6 md5 bytea
SELECT coalesce(
    (SELECT m.id FROM memories m
     WHERE $2::text = 'mem' AND m.tenant_id = $1 AND m.agent_id = $3 AND m.project_id = $4
       AND m.channel = $5 AND m.content_hash = $6
     ORDER BY m.id LIMIT 1),
    (SELECT e.id FROM episodes e
     WHERE $2::text = 'ep' AND e.tenant_id = $1 AND e.agent_id = $3 AND e.project_id = $4
       AND e.channel = $5 AND decode(md5(e.summary), 'hex') = $6
     ORDER BY e.id LIMIT 1))

-- named_record_keys --
-- The bucket and text MD5 of every record of an agent that its declarations name (a
-- mention, or a relation's subject, object or anchor): what a merge needs to find the
-- copies of those records in the target agent.
-- $1 tenant_id uuid, $2 agent_id bigint
WITH named AS (
    SELECT m.ref_kind AS kind, m.ref_id AS id
    FROM entity_mentions m
    JOIN entities e ON e.tenant_id = m.tenant_id AND e.id = m.entity_id
    WHERE m.tenant_id = $1 AND e.agent_id = $2
    UNION
    SELECT x.kind, x.id
    FROM relations r,
         LATERAL (VALUES (r.subject_kind, r.subject_id), (r.object_kind, r.object_id),
                         (r.anchor_kind, r.anchor_id)) x(kind, id)
    WHERE r.tenant_id = $1 AND r.agent_id = $2 AND x.kind IN ('mem', 'ep')
)
SELECT 'mem' AS kind, mm.id, mm.project_id, mm.channel, mm.content_hash AS digest
FROM named n JOIN memories mm ON mm.tenant_id = $1 AND mm.id = n.id
WHERE n.kind = 'mem' AND mm.agent_id = $2
UNION ALL
SELECT 'ep', ee.id, ee.project_id, ee.channel, decode(md5(ee.summary), 'hex')
FROM named n JOIN episodes ee ON ee.tenant_id = $1 AND ee.id = n.id
WHERE n.kind = 'ep' AND ee.agent_id = $2

-- delete_agent_graph --
-- Every entity and relation of one agent (aliases and mentions go with their entity): a
-- merge move leaves the source agent without declarations.
-- $1 tenant_id uuid, $2 agent_id bigint
WITH rel AS (DELETE FROM relations WHERE tenant_id = $1 AND agent_id = $2)
DELETE FROM entities WHERE tenant_id = $1 AND agent_id = $2
