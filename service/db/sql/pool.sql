-- enter_tenant --
-- Confine the current transaction: switch to the application role (RLS applies)
-- and set the tenant the policies compare against. Also let HNSW scans continue past
-- rows of other agents (pgvector iterative scan), so a small agent in a large table
-- still gets its nearest rows; plan statements the way $5 says, with HNSW's search
-- breadth (CPERSONA_HNSW_EF_SEARCH) and the cost of a random page read for data in
-- memory (CPERSONA_RANDOM_PAGE_COST: with Postgres's 4.0 the vector channel of a small
-- table took the exact plan, which reads every vector back from TOAST). $5 is
-- 'force_custom_plan' (the default: every statement planned for its values; a generic
-- plan of the recall statement as written, every optional filter in it, drops the HNSW
-- index: 352 ms instead of 27 ms at 100k rows) or 'force_generic_plan' (a recall whose
-- statement is rendered per shape, service/db/recall.py: that generic plan keeps the
-- HNSW and full-text indexes, tests/db/test_recall_plan.py, and is made once per
-- connection, saving about 3 ms of planning per recall). All settings are
-- transaction-local.
-- $6 is '0' for a transaction of index probes under LIMITs (recall's retrieval): no
-- parallel workers, whose start costs more than they save and which a Gather launches
-- even below a branch its one-time filter turns off (5.8-6.6 ms a recall at 100k rows,
-- docs/reliability.md, "Long-record costs"); '' keeps the server's setting.
-- $1 role text, $2 tenant_id text, $3 hnsw.ef_search text, $4 random_page_cost text,
-- $5 plan_cache_mode text, $6 max_parallel_workers_per_gather text ('' = unchanged)
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', $3, true),
       set_config('random_page_cost', $4, true),
       set_config('plan_cache_mode', $5, true),
       set_config('max_parallel_workers_per_gather',
                  coalesce(nullif($6, ''), current_setting('max_parallel_workers_per_gather')),
                  true)

-- enter_tenant_cached_plans --
-- enter_tenant without forcing a custom plan per execution (plan_cache_mode stays
-- auto: Postgres reuses a prepared statement's generic plan once it is no costlier).
-- For transactions of short keyed statements whose plan does not depend on the values
-- (store's write, the pause check, the write-behind's claim and settle): re-planning
-- the store statement on every call costs about 0.6 ms of Postgres CPU.
-- $1 role text, $2 tenant_id text, $3 hnsw.ef_search text
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', $3, true)

-- ping --
-- Liveness of the database connection.
SELECT 1

-- learn_array_codecs --
-- Names every array type a named query binds or returns that asyncpg has no built-in
-- codec for (text[] and oid[] it has). Prepared once per connection inside a
-- transaction that rolls back (service/db/pool.py): asyncpg learns such a type by an
-- introspection query it wraps in a session-level set_config('jit', ...), and rolling
-- back undoes that, where a first use inside a committed tenant transaction would leave
-- jit set on the server connection for whichever client PgBouncer hands it to next.
-- tests/db/test_session_state.py fails when a named query uses a type missing here.
SELECT NULL::bigint[], NULL::integer[], NULL::boolean[], NULL::double precision[],
       NULL::bytea[], NULL::name[], NULL::timestamptz[], NULL::uuid[], NULL::vector[]
