-- reconstruct_cues --
-- The entities a reconstruct query names (docs/tools.md, "reconstruct", query expansion):
-- readable entities whose normalized name or alias is a substring of the normalized query,
-- longest term first, at most :matches (term, entity) pairs, each with the entity's name
-- and its aliases as written (by normalized form). Scope as traverse: project NULL = all,
-- '' = the global pool, X = X plus the global pool; channel '' = any, C = C plus
-- channel-less entities.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :query normalized
-- query text, :matches int
WITH agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), visible AS NOT MATERIALIZED (
    SELECT e.id, e.name, e.normalized FROM entities e
    WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '')
      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '')
), matched AS (
    SELECT v.id, v.normalized AS term FROM visible v
    WHERE v.normalized <> '' AND strpos(:query::text, v.normalized) > 0
    UNION
    SELECT v.id, x.normalized FROM visible v
    JOIN entity_aliases x ON x.tenant_id = :tenant_id AND x.entity_id = v.id
    WHERE x.normalized <> '' AND strpos(:query::text, x.normalized) > 0
    ORDER BY 2, 1
), kept AS (
    SELECT m.id, m.term FROM matched m
    ORDER BY length(m.term) DESC, m.term, m.id
    LIMIT :matches
)
SELECT k.id, k.term, v.name, v.normalized,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(x.alias, x.normalized) ORDER BY x.normalized),
                        '[]'::jsonb)
        FROM entity_aliases x WHERE x.tenant_id = :tenant_id AND x.entity_id = k.id) AS aliases
FROM kept k JOIN visible v ON v.id = k.id
ORDER BY length(k.term) DESC, k.term, k.id

-- reconstruct_rows --
-- What bundling reads of the candidate rows, in one round trip: the memories' and
-- episodes' scope (project, channel), message id, source, stored timestamp and, for an
-- episode, its [start_time, end_time]; plus the declared record-to-record relations whose
-- two ends are both candidates (readable in the call's scope). Rows of another agent are
-- not read (a candidate is this agent's by construction; the predicate is the guard).
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :memories bigint[],
-- :episodes bigint[]
WITH agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
)
SELECT 'mem' AS kind, m.id, m.project_id, m.channel, m.msg_id, m.source,
       m.timestamp_text AS stamp, NULL::text AS start_time, NULL::text AS end_time,
       m.content AS text,
       NULL::text AS subject, NULL::text AS predicate, NULL::text AS object
FROM memories m
WHERE m.tenant_id = :tenant_id AND m.agent_id = (SELECT id FROM agent)
  AND m.id = ANY(:memories::bigint[])
UNION ALL
SELECT 'ep', e.id, e.project_id, e.channel, '', '{"System": "episode"}'::jsonb,
       coalesce(e.start_time, to_char(e.created_at AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')),
       e.start_time, e.end_time, e.summary, NULL, NULL, NULL
FROM episodes e
WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
  AND e.id = ANY(:episodes::bigint[])
UNION ALL
SELECT 'link', r.id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       r.subject_kind || ':' || r.subject_id, r.predicate, r.object_kind || ':' || r.object_id
FROM relations r
WHERE r.tenant_id = :tenant_id AND r.agent_id = (SELECT id FROM agent)
  AND (:project_id::text IS NULL OR r.project_id = :project_id OR r.project_id = '')
  AND (:channel::text = '' OR r.channel = :channel OR r.channel = '')
  AND (r.subject_memory = ANY(:memories::bigint[]) OR r.subject_episode = ANY(:episodes::bigint[]))
  AND (r.object_memory = ANY(:memories::bigint[]) OR r.object_episode = ANY(:episodes::bigint[]))

-- reconstruct_walk --
-- The part of the declared graph a reconstruct's relation walk may follow
-- (docs/tools.md, "reconstruct", the relation walk), in one statement: the entities the
-- start records mention; a breadth-first walk from all of them over readable
-- entity-to-entity relations in both directions, up to :max_hops hops and 256 entities
-- (each frontier entity's most recent 256 links per direction, as traverse); every
-- readable relation touching a reached entity (most recent 256 per direction and
-- entity), so the caller can tell a relation was left unfollowed; and for every reached
-- entity the readable records that mention it, lowest id first, at most :per_entity,
-- leaving out the candidate pool, with the fields a claim needs. Readable: this agent's,
-- in the project and channel scope, a memory matching the source pattern, an episode only
-- when no source pattern is given or a channel is.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :source_pattern
-- text (NULL = none), :start_memories bigint[], :start_episodes bigint[], :pool_memories
-- bigint[], :pool_episodes bigint[], :max_hops int, :per_entity int
WITH RECURSIVE agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), visible AS NOT MATERIALIZED (
    SELECT e.id FROM entities e
    WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '')
      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '')
), readable_relations AS NOT MATERIALIZED (
    SELECT r.* FROM relations r
    WHERE r.tenant_id = :tenant_id AND r.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR r.project_id = :project_id OR r.project_id = '')
      AND (:channel::text = '' OR r.channel = :channel OR r.channel = '')
), starts AS MATERIALIZED (
    SELECT mm.ref_kind || ':' || mm.ref_id AS ref, mm.entity_id
    FROM entity_mentions mm
    WHERE mm.tenant_id = :tenant_id
      AND (mm.memory_id = ANY(:start_memories::bigint[])
           OR mm.episode_id = ANY(:start_episodes::bigint[]))
      AND mm.entity_id IN (SELECT id FROM visible)
), walk (hops, frontier, seen) AS (
    SELECT 0, array_agg(DISTINCT entity_id ORDER BY entity_id),
           array_agg(DISTINCT entity_id ORDER BY entity_id)
    FROM starts HAVING count(*) > 0
    UNION ALL
    SELECT w.hops + 1, n.next, w.seen || n.next
    FROM walk w, LATERAL (
        SELECT array_agg(t.there ORDER BY t.at DESC, t.there) AS next
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
            LIMIT greatest(256 - cardinality(w.seen), 0)
        ) t
    ) n
    WHERE w.hops < :max_hops AND n.next IS NOT NULL
), reached AS (
    SELECT DISTINCT x.id FROM walk w, unnest(w.frontier) x(id)
), edges AS (
    SELECT DISTINCT l.id, l.subject_entity, l.object_entity, l.predicate, l.declared_at
    FROM reached e, LATERAL (
        (SELECT r.id, r.subject_entity, r.object_entity, r.predicate, r.declared_at
         FROM readable_relations r
         WHERE r.subject_entity = e.id AND r.object_entity IS NOT NULL
           AND r.object_entity IN (SELECT id FROM visible)
         ORDER BY r.declared_at DESC LIMIT 256)
        UNION ALL
        (SELECT r.id, r.subject_entity, r.object_entity, r.predicate, r.declared_at
         FROM readable_relations r
         WHERE r.object_entity = e.id AND r.subject_entity IS NOT NULL
           AND r.subject_entity IN (SELECT id FROM visible)
         ORDER BY r.declared_at DESC LIMIT 256)
    ) l
), mentioning AS (
    SELECT e.id AS entity_id, x.kind, x.id
    FROM reached e, LATERAL (
        SELECT y.kind, y.id FROM (
            (SELECT 'mem' AS kind, mm.ref_id AS id
             FROM entity_mentions mm
             JOIN memories m ON m.tenant_id = :tenant_id AND m.id = mm.memory_id
             WHERE mm.tenant_id = :tenant_id AND mm.entity_id = e.id AND mm.ref_kind = 'mem'
               AND m.agent_id = (SELECT id FROM agent)
               AND (:project_id::text IS NULL OR m.project_id = :project_id OR m.project_id = '')
               AND (:channel::text = '' OR m.channel = :channel OR m.channel = '')
               AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern)
               AND mm.ref_id <> ALL(:pool_memories::bigint[])
             ORDER BY mm.ref_id LIMIT :per_entity)
            UNION ALL
            (SELECT 'ep', mm.ref_id
             FROM entity_mentions mm
             JOIN episodes p ON p.tenant_id = :tenant_id AND p.id = mm.episode_id
             WHERE mm.tenant_id = :tenant_id AND mm.entity_id = e.id AND mm.ref_kind = 'ep'
               AND p.agent_id = (SELECT id FROM agent)
               AND (:project_id::text IS NULL OR p.project_id = :project_id OR p.project_id = '')
               AND (:channel::text = '' OR p.channel = :channel OR p.channel = '')
               AND (:source_pattern::text IS NULL OR :channel::text <> '')
               AND mm.ref_id <> ALL(:pool_episodes::bigint[])
             ORDER BY mm.ref_id LIMIT :per_entity)
        ) y
        ORDER BY y.id, y.kind
        LIMIT :per_entity
    ) x
    WHERE EXISTS (SELECT 1 FROM edges d WHERE d.subject_entity = e.id OR d.object_entity = e.id)
), records AS (
    SELECT DISTINCT kind, id FROM mentioning
)
SELECT
    (SELECT coalesce(jsonb_agg(jsonb_build_array(s.ref, s.entity_id) ORDER BY s.ref, s.entity_id),
                     '[]'::jsonb) FROM starts s) AS mentions,
    (SELECT coalesce(jsonb_agg(r.id ORDER BY r.id), '[]'::jsonb) FROM reached r) AS reached,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(d.id, d.subject_entity, d.object_entity,
                                                 d.predicate)
                               ORDER BY d.declared_at DESC, d.id DESC), '[]'::jsonb)
     FROM edges d) AS edges,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(g.entity_id, g.kind || ':' || g.id)
                               ORDER BY g.entity_id, g.id, g.kind), '[]'::jsonb)
     FROM mentioning g) AS mentioning,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
         'kind', 'mem', 'id', m.id, 'project_id', m.project_id, 'channel', m.channel,
         'msg_id', m.msg_id, 'source', m.source, 'stamp', m.timestamp_text, 'text', m.content)
         ORDER BY m.id), '[]'::jsonb)
     FROM records c JOIN memories m ON m.tenant_id = :tenant_id AND m.id = c.id
     WHERE c.kind = 'mem') AS memories,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
         'kind', 'ep', 'id', p.id, 'project_id', p.project_id, 'channel', p.channel,
         'stamp', coalesce(p.start_time, to_char(p.created_at AT TIME ZONE 'UTC',
                                                 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')),
         'start_time', p.start_time, 'end_time', p.end_time, 'text', p.summary)
         ORDER BY p.id), '[]'::jsonb)
     FROM records c JOIN episodes p ON p.tenant_id = :tenant_id AND p.id = c.id
     WHERE c.kind = 'ep') AS episodes
