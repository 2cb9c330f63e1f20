-- enter_tenant --
-- Confine the current transaction: switch to the application role (RLS applies)
-- and set the tenant the policies compare against. Also let HNSW scans continue past
-- rows of other agents (pgvector iterative scan), so a small agent in a large table
-- still gets its nearest rows, and plan every statement for its actual parameters (a
-- generic plan of the recall statement as written, every optional filter in it, drops the
-- HNSW index: 352 ms instead of 27 ms at 100k rows; the shaped statement's does not, see
-- enter_tenant_generic_plans), with HNSW's search breadth (CPERSONA_HNSW_EF_SEARCH) and the cost of a
-- random page read for data in memory (CPERSONA_RANDOM_PAGE_COST: with Postgres's 4.0 the
-- vector channel of a small table took the exact plan, which reads every vector back from
-- TOAST). All settings are transaction-local.
-- $1 role text, $2 tenant_id text, $3 hnsw.ef_search text, $4 random_page_cost text
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', $3, true),
       set_config('random_page_cost', $4, true),
       set_config('plan_cache_mode', 'force_custom_plan', true)

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

-- enter_tenant_generic_plans --
-- enter_tenant with each prepared statement's generic plan, made once per connection and
-- reused, instead of a plan per execution: for the recall statement rendered per shape
-- (service/db/recall.py), whose generic plan keeps the HNSW and full-text indexes
-- (tests/db/test_recall_plan.py) and saves its planning, about 3 ms of every recall.
-- $1 role text, $2 tenant_id text, $3 hnsw.ef_search text, $4 random_page_cost text
SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true),
       set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search', $3, true),
       set_config('random_page_cost', $4, true),
       set_config('plan_cache_mode', 'force_generic_plan', true)

-- ping --
-- Liveness of the database connection.
SELECT 1
