-- part: graph_entities --
-- The agent and its entities readable in a read scope (traverse, the reconstruct walk and
-- the reconstruct cues include it as {part:graph_entities}): project NULL = all, '' = the
-- global pool, X = X plus the global pool; channel '' = no filter, C = C plus
-- channel-less rows.
-- :tenant_id uuid, :agent (name) text, :project_id text, :channel text
agent AS (
    SELECT id FROM agents WHERE tenant_id = :tenant_id AND name = :agent
), visible AS NOT MATERIALIZED (
    SELECT e.id, e.name, e.normalized FROM entities e
    WHERE e.tenant_id = :tenant_id AND e.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '')
      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '')
)

-- part: graph_relations --
-- The agent's relations readable in the same scope (after {part:graph_entities}). With
-- :as_of only relations declared at or before it are read (docs/tools.md, "Facts that
-- change": the graph as it stood then); NULL reads them all.
-- :tenant_id uuid, :project_id text, :channel text, :as_of timestamptz
readable_relations AS NOT MATERIALIZED (
    SELECT r.* FROM relations r
    WHERE r.tenant_id = :tenant_id AND r.agent_id = (SELECT id FROM agent)
      AND (:project_id::text IS NULL OR r.project_id = :project_id OR r.project_id = '')
      AND (:channel::text = '' OR r.channel = :channel OR r.channel = '')
      AND (:as_of::timestamptz IS NULL OR r.declared_at <= :as_of)
)

-- part: graph_walk --
-- Breadth first from the including query's ``starts`` (column ``id``) over readable
-- entity-to-entity relations in both directions up to :max_hops hops and 256 entities, each
-- frontier entity's most recent 256 links per direction (a hub of 100k relations costs an
-- index range, not its degree); the entities reached by the most recent relations are
-- kept where the entity bound binds (included as {part:graph_walk}).
-- :max_hops int
walk (hops, frontier, stamps, seen) AS (
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
            LIMIT greatest(256 - cardinality(w.seen), 0)
        ) t
    ) n
    WHERE w.hops < :max_hops AND n.next IS NOT NULL
)

-- traverse --
-- The declared neighbourhood of an entity (docs/tools.md, "traverse"), in one statement:
-- the starts (readable entities whose name or alias is the normalized :normalized), a
-- breadth-first walk over readable entity-to-entity relations in both directions
-- up to :max_hops hops and 256 entities (each frontier entity's most recent 256 links at most, so a
-- hub of 100k relations costs an index range, not its degree), then the first :limit
-- entities by hops, recency of the reaching relation and id, with their aliases, their
-- readable mentions (lowest id first, at most :limit) and the relations among them (most
-- recent first, at most 256). Project NULL = all, '' = the global pool, X = X plus the
-- global pool; channel '' = no filter, C = C plus channel-less rows; a source pattern
-- keeps the memories whose source.id matches, and episodes only when a channel is given.
-- :tenant_id uuid, :agent (name) text, :normalized (entity) text, :project_id text,
-- :channel text, :source_pattern text, :max_hops int, :limit int, :as_of timestamptz
-- (NULL = now)
WITH RECURSIVE {part:graph_entities}, {part:graph_relations}, starts AS (
    SELECT v.id FROM visible v
    WHERE v.normalized = :normalized OR EXISTS (
        SELECT 1 FROM entity_aliases x
        WHERE x.tenant_id = :tenant_id AND x.entity_id = v.id AND x.normalized = :normalized)
), {part:graph_walk}, reached AS (
    SELECT x.id, w.hops, x.at
    FROM walk w, unnest(w.frontier, w.stamps) x(id, at)
), everyone AS (
    SELECT coalesce(array_agg(id), '{}') AS ids FROM reached
), kept AS (
    SELECT r.id, r.hops, row_number() OVER (ORDER BY r.hops, r.at DESC NULLS FIRST, r.id) AS position
    FROM reached r
    ORDER BY position
    LIMIT :limit
), mentioned AS (
    SELECT k.id, m.ref, m.total
    FROM kept k, LATERAL (
        SELECT array_agg(x.ref_kind || ':' || x.ref_id ORDER BY x.ref_id)
                   FILTER (WHERE x.n <= :limit) AS ref,
               count(*) AS total
        FROM (
            SELECT mm.ref_kind, mm.ref_id, row_number() OVER (ORDER BY mm.ref_id) AS n
            FROM entity_mentions mm
            WHERE mm.tenant_id = :tenant_id AND mm.entity_id = k.id
              AND (EXISTS (
                    SELECT 1 FROM memories m
                    WHERE m.tenant_id = :tenant_id AND m.id = mm.memory_id
                      AND m.agent_id = (SELECT id FROM agent)
                      AND (:project_id::text IS NULL OR m.project_id = :project_id OR m.project_id = '')
                      AND (:channel::text = '' OR m.channel = :channel OR m.channel = '')
                      AND (:source_pattern::text IS NULL OR m.source ->> 'id' LIKE :source_pattern))
                OR EXISTS (
                    SELECT 1 FROM episodes e
                    WHERE e.tenant_id = :tenant_id AND e.id = mm.episode_id
                      AND e.agent_id = (SELECT id FROM agent)
                      AND (:project_id::text IS NULL OR e.project_id = :project_id OR e.project_id = '')
                      AND (:channel::text = '' OR e.channel = :channel OR e.channel = '')
                      AND (:source_pattern::text IS NULL OR :channel::text <> '')))
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
                     WHERE x.tenant_id = :tenant_id AND x.entity_id = k.id),
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
        WHERE r.hops = :max_hops
    ) AS beyond_hops

-- reconstruct_walk --
-- The part of the declared graph a reconstruct's relation walk may follow
-- (docs/tools.md, "reconstruct"), in one statement: the entities the start records
-- mention; the graph_walk from all of them (up to :max_hops hops and 256 entities); every readable
-- relation touching a reached entity (most recent 256 per direction and entity, so the
-- caller can tell a relation was left unfollowed), most recent first; and for every
-- reached entity with a relation, the readable records that mention it, lowest id first,
-- at most :per_entity, leaving out the candidate pool, with the fields a claim needs. Readable:
-- this agent's, in the project and channel scope, a memory matching the source pattern,
-- an episode only when no source pattern is given or a channel is.
-- :tenant_id uuid, :agent (name) text, :start_memories (ids) bigint[], :project_id text,
-- :channel text, :source_pattern text (NULL = none), :max_hops int, :per_entity int,
-- :as_of timestamptz (NULL = now), :pool_memories (ids) bigint[], :pool_episodes (ids)
-- bigint[], :start_episodes (ids) bigint[]
WITH RECURSIVE {part:graph_entities}, {part:graph_relations}, start_mentions AS MATERIALIZED (
    SELECT mm.ref_kind || ':' || mm.ref_id AS ref, mm.entity_id
    FROM entity_mentions mm
    WHERE mm.tenant_id = :tenant_id
      AND (mm.memory_id = ANY(:start_memories::bigint[]) OR mm.episode_id = ANY(:start_episodes::bigint[]))
      AND mm.entity_id IN (SELECT id FROM visible)
), starts AS (
    SELECT DISTINCT entity_id AS id FROM start_mentions
), {part:graph_walk}, reached AS (
    SELECT DISTINCT x.id FROM walk w, unnest(w.frontier) x(id)
), edges AS (
    SELECT DISTINCT l.id, l.subject_entity, l.object_entity, l.predicate, l.declared_at
    FROM reached e, LATERAL (
        (SELECT r.id, r.subject_entity, r.object_entity, r.predicate, r.declared_at
         FROM readable_relations r
         WHERE r.subject_entity = e.id AND r.object_entity IN (SELECT id FROM visible)
         ORDER BY r.declared_at DESC LIMIT 256)
        UNION ALL
        (SELECT r.id, r.subject_entity, r.object_entity, r.predicate, r.declared_at
         FROM readable_relations r
         WHERE r.object_entity = e.id AND r.subject_entity IN (SELECT id FROM visible)
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
                     '[]'::jsonb) FROM start_mentions s) AS mentions,
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
