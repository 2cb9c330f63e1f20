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
