-- get_contents --
-- The full rows behind get_contents refs, memories and episodes in one round trip
-- (docs/tools.md, "Batch budget"; docs/tools.md, "Refs"). Each table is searched only
-- with its own id list, so a mem: ref can never resolve to an episode or the reverse,
-- even though both take ids from one sequence. Ownership is exact: the agent named $2 of
-- tenant $1, resolved inside the statement; no project or channel filter. An unknown
-- agent resolves nothing.
-- $1 tenant_id uuid, $2 agent name text, $3 memory ids bigint[], $4 episode ids bigint[]
WITH owner AS (
    SELECT id FROM agents WHERE tenant_id = $1 AND name = $2
)
SELECT 'mem' AS kind, m.id, m.content AS body, m.source, m.timestamp_text, m.msg_id,
       NULL::text AS start_time, NULL::timestamptz AS created_at, NULL::boolean AS resolved
FROM memories m
WHERE m.tenant_id = $1 AND m.id = ANY ($3::bigint[]) AND m.agent_id = (SELECT id FROM owner)
UNION ALL
SELECT 'ep' AS kind, e.id, e.summary AS body, NULL::jsonb, NULL::text, NULL::text,
       e.start_time, e.created_at, e.resolved
FROM episodes e
WHERE e.tenant_id = $1 AND e.id = ANY ($4::bigint[]) AND e.agent_id = (SELECT id FROM owner)

-- passage_spans --
-- The current passages of the records named (get_contents' passage ranges,
-- docs/tools.md, "get_contents ranges"): only those cut from the record's text as it is
-- now (a stale passage is never served), in text order. Run after get_contents found
-- the records for the caller's agent, so ownership is already settled.
-- $1 tenant_id uuid, $2 memory ids bigint[], $3 episode ids bigint[]
SELECT p.item_kind AS kind, p.item_id AS id, p.start_char, p.end_char
FROM passages p JOIN memories m ON m.tenant_id = p.tenant_id AND m.id = p.item_id
WHERE p.tenant_id = $1 AND p.item_kind = 'mem' AND p.item_id = ANY ($2::bigint[])
  AND p.source_hash = m.content_hash
UNION ALL
SELECT p.item_kind, p.item_id, p.start_char, p.end_char
FROM passages p JOIN episodes e ON e.tenant_id = p.tenant_id AND e.id = p.item_id
WHERE p.tenant_id = $1 AND p.item_kind = 'ep' AND p.item_id = ANY ($3::bigint[])
  AND p.source_hash = decode(md5(episode_text(e.summary, e.keywords)), 'hex')
ORDER BY 1, 2, 3
