-- ledger_deliver --
-- One recall's exchange with the session ledger (no repeats within a session), in one
-- round trip: which offered rows the session already holds, and the record of what this
-- answer delivers whole. Rows are offered best first; the token budget admits a prefix
-- by the rule of service/mcp/shaping/budget.py (admitted): the first row always, a later
-- one while the running total (a held row costs its stub) stays within :budget. Admitted
-- whole rows the session did not hold are recorded (or refreshed) until now() + :ttl
-- seconds. The statement also deletes the tenant's expired rows (at most 500 a call)
-- and the session's oldest rows past :max_rows, never a row offered here. Returns the held
-- positions (0-based) and how many rows were recorded and deleted.
-- :tenant_id uuid, :session_key text, :kinds text[], :ids row ids bigint[],
-- :costs integer[], :stub_costs stub costs integer[], :whole boolean[],
-- :budget integer (NULL: none), :look_up look up held rows boolean, :ttl seconds integer,
-- :max_rows max rows per session integer
WITH offered AS (
    SELECT o.kind, o.row_id, o.cost, o.stub_cost, o.whole, o.pos
    FROM unnest(:kinds::text[], :ids::bigint[], :costs::integer[], :stub_costs::integer[], :whole::boolean[])
         WITH ORDINALITY AS o (kind, row_id, cost, stub_cost, whole, pos)
), held AS (
    SELECT o.pos
    FROM offered o
    JOIN recall_ledger l
      ON l.tenant_id = :tenant_id AND l.session_key = :session_key AND l.kind = o.kind AND l.row_id = o.row_id
    WHERE :look_up::boolean AND l.expires_at > now()
), walked AS (
    SELECT o.kind, o.row_id, o.whole, o.pos, h.pos IS NOT NULL AS held,
           sum(CASE WHEN h.pos IS NULL THEN o.cost ELSE o.stub_cost END)
               OVER (ORDER BY o.pos) AS spent
    FROM offered o
    LEFT JOIN held h ON h.pos = o.pos
), recorded AS (
    INSERT INTO recall_ledger AS l (tenant_id, session_key, kind, row_id, delivered_at,
                                    expires_at)
    SELECT :tenant_id, :session_key, w.kind, w.row_id, now(), now() + make_interval(secs => :ttl::integer)
    FROM walked w
    WHERE w.whole AND NOT w.held AND (w.pos = 1 OR :budget::integer IS NULL OR w.spent <= :budget)
    ON CONFLICT (tenant_id, session_key, kind, row_id)
    DO UPDATE SET delivered_at = EXCLUDED.delivered_at, expires_at = EXCLUDED.expires_at
    RETURNING 1
), doomed AS (
    (SELECT k.session_key, k.kind, k.row_id
     FROM recall_ledger k
     WHERE k.tenant_id = :tenant_id AND k.expires_at <= now()
     LIMIT 500)
    UNION
    (SELECT k.session_key, k.kind, k.row_id
     FROM recall_ledger k
     WHERE k.tenant_id = :tenant_id AND k.session_key = :session_key
     ORDER BY k.delivered_at DESC
     OFFSET greatest(:max_rows::integer - (SELECT count(*) FROM offered), 0))
), swept AS (
    DELETE FROM recall_ledger l
    USING doomed d
    WHERE l.tenant_id = :tenant_id AND l.session_key = d.session_key AND l.kind = d.kind
      AND l.row_id = d.row_id
      AND NOT EXISTS (SELECT 1 FROM offered o
                      WHERE d.session_key = :session_key AND o.kind = d.kind AND o.row_id = d.row_id)
    RETURNING 1
)
SELECT coalesce((SELECT array_agg(h.pos::integer - 1 ORDER BY h.pos) FROM held h),
                '{}'::integer[]) AS held,
       (SELECT count(*) FROM recorded) AS recorded,
       (SELECT count(*) FROM swept) AS swept
