-- reconstruct_cues --
-- The entities a reconstruct query names (docs/tools.md, "reconstruct", query expansion):
-- readable entities whose normalized name or alias is a substring of the normalized query,
-- longest term first, at most :matches (term, entity) pairs, each with the entity's name
-- and its aliases as written (by normalized form). Scope as traverse: project NULL = all,
-- '' = the global pool, X = X plus the global pool; channel '' = any, C = C plus
-- channel-less entities.
-- :tenant_id uuid, :agent name text, :project_id text, :channel text, :query normalized
-- query text, :matches int
WITH {part:graph_entities}, matched AS (
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
-- two ends are both candidates (readable in the call's scope), and one 'mentioned' row whose
-- id is 1 when a candidate is declared to mention an entity (else 0: the relation walk,
-- which starts from such mentions, has nothing to do). Rows of another agent are
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
UNION ALL
SELECT 'mentioned', (SELECT count(*) FROM (
           SELECT 1 FROM entity_mentions mm
           WHERE mm.tenant_id = :tenant_id
             AND (mm.memory_id = ANY(:memories::bigint[]) OR mm.episode_id = ANY(:episodes::bigint[]))
           LIMIT 1) x),
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
