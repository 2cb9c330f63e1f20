"""What asyncpg must do differently when a pooler sits between it and Postgres.

Behind PgBouncer in transaction mode (``CPERSONA_DB_POOLER=pgbouncer``) two transactions
of one client connection may run on two different server connections, so nothing may
outlive a transaction on the server:

* **Named prepared statements.** asyncpg prepares and caches a named statement per
  distinct query; PgBouncer 1.18 does not track them, so the next transaction finds
  "prepared statement __asyncpg_stmt_N__ does not exist" (or one of another client).
  ``statement_cache_size=0`` makes asyncpg use the unnamed statement, parsed, bound and
  executed in one exchange on one server connection. So a recall's generic plan
  (``tenant_tx(generic_plans=True)``) is made again at every execution there: as safe as
  with the cache, without its saving.
* **Session state.** Every setting the service makes (role, ``app.tenant_id``, the
  planner and HNSW settings) is transaction-local (``set_config(..., true)``);
  ``tests/db/test_session_state.py`` fails on any statement that would leave state on
  a server connection.
* **The reset query** asyncpg runs on release (``RESET ALL``, ``UNLISTEN *``, ...) is
  already skipped by the pool (nothing to reset).

Without a pooler asyncpg keeps its statement cache: a cached statement saves the parse
and plan of every repeated query (``bench/scaleout/pooler.py`` measures the difference).
"""

from __future__ import annotations

from typing import Any

from service.config import DbPooler


def connect_options(pooler: DbPooler) -> dict[str, Any]:
    """Extra ``asyncpg.connect``/``create_pool`` arguments for ``pooler``."""
    if pooler == "pgbouncer":
        return {"statement_cache_size": 0}
    return {}
