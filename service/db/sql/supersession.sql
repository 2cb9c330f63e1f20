-- successor_of --
-- The relation that supersedes a record (at most one, migration 0019) and its subject.
-- $1 tenant_id uuid, $2 object kind text ('mem' or 'ep'), $3 object id bigint
SELECT r.id, r.subject_kind, r.subject_id
FROM relations r
WHERE r.tenant_id = $1 AND r.object_kind = $2 AND r.object_id = $3
  AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity'

-- reaches_by_successors --
-- Whether walking successors up from record ($2, $3) reaches record ($4, $5) within $6
-- steps, and whether the walk was cut at $6 (a chain that long, or a cycle). Each step is
-- one probe of relations_one_successor: the walk is linear and bounded.
-- $1 tenant_id uuid, $2 start kind text, $3 start id bigint, $4 goal kind text, $5 goal
-- id bigint, $6 max steps int
WITH RECURSIVE up (kind, id, step) AS (
    SELECT $2::text, $3::bigint, 0
    UNION ALL
    SELECT n.subject_kind, n.subject_id, u.step + 1
    FROM up u, LATERAL (
        SELECT r.subject_kind, r.subject_id FROM relations r
        WHERE r.tenant_id = $1 AND r.object_kind = u.kind AND r.object_id = u.id
          AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity'
          AND r.object_kind <> 'entity'
        LIMIT 1
    ) n
    WHERE u.step < $6 AND NOT (u.kind = $4::text AND u.id = $5::bigint AND u.step > 0)
)
SELECT EXISTS (SELECT 1 FROM up WHERE kind = $4::text AND id = $5::bigint AND step > 0)
           AS reaches,
       coalesce(max(step), 0) >= $6 AS cut
FROM up

-- links_of --
-- The supersession relations (record to record) of one agent that name any of the given
-- memories or episodes as subject or object. Index probes per ref (the older end through
-- relations_one_successor, the newer through the subject-record indexes; OFFSET 0 keeps
-- each a parameterized probe instead of a join over the tenant's relations), so the cost
-- follows the refs asked, not the tenant's supersessions.
-- $1 tenant_id uuid, $2 agent name text, $3 memory ids bigint[], $4 episode ids bigint[]
WITH agent AS (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2),
wanted (kind, id) AS (
    SELECT 'mem'::text, m FROM unnest($3::bigint[]) m
    UNION ALL
    SELECT 'ep'::text, e FROM unnest($4::bigint[]) e
),
found AS (
    SELECT o.* FROM wanted w, LATERAL (
        SELECT r.id, r.agent_id, r.subject_kind, r.subject_id, r.object_kind, r.object_id,
               r.declared_at
        FROM relations r
        WHERE r.tenant_id = $1 AND r.object_kind = w.kind AND r.object_id = w.id
          AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity'
          AND r.object_kind <> 'entity'
        LIMIT 1) o
    UNION
    SELECT n.* FROM unnest($3::bigint[]) w(id), LATERAL (
        SELECT r.id, r.agent_id, r.subject_kind, r.subject_id, r.object_kind, r.object_id,
               r.declared_at
        FROM relations r
        WHERE r.tenant_id = $1 AND r.subject_memory = w.id
          AND r.predicate = 'supersedes' AND r.object_kind <> 'entity'
        OFFSET 0) n
    UNION
    SELECT n.* FROM unnest($4::bigint[]) w(id), LATERAL (
        SELECT r.id, r.agent_id, r.subject_kind, r.subject_id, r.object_kind, r.object_id,
               r.declared_at
        FROM relations r
        WHERE r.tenant_id = $1 AND r.subject_episode = w.id
          AND r.predicate = 'supersedes' AND r.object_kind <> 'entity'
        OFFSET 0) n
)
SELECT f.id, f.subject_kind, f.subject_id, f.object_kind, f.object_id, f.declared_at
FROM found f
WHERE f.agent_id = (SELECT id FROM agent)

-- agent_links --
-- Every supersession relation (record to record) of one agent, by id, at most $3.
-- $1 tenant_id uuid, $2 agent name text, $3 limit int
SELECT r.id, r.subject_kind, r.subject_id, r.object_kind, r.object_id, r.declared_at
FROM relations r
WHERE r.tenant_id = $1 AND r.predicate = 'supersedes'
  AND r.agent_id = (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
  AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity'
ORDER BY r.id
LIMIT $3

-- linked_agents --
-- The agents of the tenant that have supersession relations (the health check's scope).
-- $1 tenant_id uuid
SELECT DISTINCT r.agent_id, a.name
FROM relations r JOIN agents a ON a.tenant_id = r.tenant_id AND a.id = r.agent_id
WHERE r.tenant_id = $1 AND r.predicate = 'supersedes'
  AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity'
ORDER BY r.agent_id

-- record_times --
-- What a record's valid_from is made of: a memory's parsed timestamp (else created_at),
-- an episode's start_time as written (parsed by the caller; else created_at). Only the
-- agent's records.
-- $1 tenant_id uuid, $2 agent name text, $3 memory ids bigint[], $4 episode ids bigint[]
WITH agent AS (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
SELECT 'mem' AS kind, m.id, m.timestamp_at AS at, NULL::text AS start_time, m.created_at
FROM memories m
WHERE m.tenant_id = $1 AND m.agent_id = (SELECT id FROM agent) AND m.id = ANY($3::bigint[])
UNION ALL
SELECT 'ep', e.id, NULL::timestamptz, e.start_time, e.created_at
FROM episodes e
WHERE e.tenant_id = $1 AND e.agent_id = (SELECT id FROM agent) AND e.id = ANY($4::bigint[])

-- agent_records --
-- The times of every record of one agent (the replay of the as_of model in tests and the
-- health check's order check), by id, at most $3.
-- $1 tenant_id uuid, $2 agent name text, $3 limit int
(SELECT 'mem' AS kind, m.id, m.timestamp_at AS at, NULL::text AS start_time, m.created_at
 FROM memories m
 WHERE m.tenant_id = $1
   AND m.agent_id = (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
 ORDER BY m.id LIMIT $3)
UNION ALL
(SELECT 'ep', e.id, NULL::timestamptz, e.start_time, e.created_at
 FROM episodes e
 WHERE e.tenant_id = $1
   AND e.agent_id = (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
 ORDER BY e.id LIMIT $3)

-- insert_supersession --
-- Declare that record ($4, $5) supersedes record ($6, $7), in a scope, without an anchor:
-- the link a delete makes between the neighbours of the record it removes. Nothing when
-- the older record already has a successor (or the same relation exists).
-- $1 tenant_id uuid, $2 agent_id bigint, $3 project_id text, $4 subject kind text, $5
-- subject id bigint, $6 object kind text, $7 object id bigint, $8 channel text
INSERT INTO relations (tenant_id, agent_id, project_id, channel, subject_kind, subject_id,
                       predicate, object_kind, object_id)
VALUES ($1, $2, $3, $8, $4, $5, 'supersedes', $6, $7)
ON CONFLICT DO NOTHING
RETURNING id

-- supersession_neighbours --
-- A record's successor relation and the relations in which it supersedes others: what a
-- delete of the record must bridge. Read before the delete (which cascades them away).
-- $1 tenant_id uuid, $2 kind text, $3 id bigint
SELECT r.id, r.agent_id, r.project_id, r.channel, r.subject_kind, r.subject_id,
       r.object_kind, r.object_id, r.declared_at
FROM relations r
WHERE r.tenant_id = $1 AND r.predicate = 'supersedes'
  AND r.subject_kind <> 'entity' AND r.object_kind <> 'entity'
  AND ((r.object_kind = $2 AND r.object_id = $3)
       OR ($2::text = 'mem' AND r.subject_memory = $3)
       OR ($2::text = 'ep' AND r.subject_episode = $3))
ORDER BY r.id

-- memory_for_history --
-- What update_memory(keep_history) copies to the new record: the memory's agent (whose
-- graph lock it takes before locking the row), scope, source and metadata. Unlocked.
-- $1 tenant_id uuid, $2 id bigint
SELECT m.agent_id, m.project_id, m.channel, m.source, m.metadata
FROM memories m
WHERE m.tenant_id = $1 AND m.id = $2

-- list_agent_memories_as_of --
-- list_agent_memories read as the model does (docs/tools.md, "Facts that change"): with
-- $5 only memories whose valid_from (timestamp, else created_at) is at or before it and
-- whose memory successor, if any, has a valid_from after it; with $6 only memories that
-- have no successor. A memory superseded by an episode stays in (the caller parses the
-- episode's start_time); the rows come newest first like the listing.
-- $1 tenant_id uuid, $2 agent name text, $3 project_id text (NULL = all), $4 limit int,
-- $5 as_of timestamptz (NULL = now), $6 current_only boolean
WITH agent AS (SELECT a.id FROM agents a WHERE a.tenant_id = $1 AND a.name = $2)
SELECT x.id, $2::text AS agent_id, x.project_id, x.content, x.source, x.timestamp_text,
       x.created_at, x.locked, x.channel
FROM memories x
WHERE x.tenant_id = $1 AND x.agent_id = (SELECT id FROM agent)
  AND ($3::text IS NULL OR x.project_id IN ($3, ''))
  AND ($5::timestamptz IS NULL OR coalesce(x.timestamp_at, x.created_at) <= $5)
  AND NOT EXISTS (
      SELECT 1 FROM relations r
      LEFT JOIN memories s ON s.tenant_id = r.tenant_id AND s.id = r.subject_memory
      WHERE r.tenant_id = $1 AND r.object_kind = 'mem' AND r.object_id = x.id
        AND r.predicate = 'supersedes' AND r.subject_kind <> 'entity'
        AND r.object_kind <> 'entity'
        AND ($6 OR coalesce(s.timestamp_at, s.created_at) <= $5))
ORDER BY x.created_at DESC, x.id DESC
LIMIT $4
