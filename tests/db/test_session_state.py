"""Nothing the service runs outlives its transaction on a server connection.

Behind PgBouncer in transaction mode the next transaction of a client connection may
run on another server connection, and the next client may get this one: a plain
``SET``, a session advisory lock, a ``LISTEN``, a temporary table or a named prepared
statement would leak between tenants or vanish. Every setting the service makes is
therefore ``set_config(..., true)`` (transaction-local). These tests fail on any named
query or service module that would leave session state, and check a real pooled
connection after real tenant work: no role, tenant, setting, lock, channel or prepared
statement left behind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.config import DbPooler, Settings
from service.db import sql
from service.db.pool import Database
from service.memory import contents, ledger, pauses, tenants
from service.memory.library import Library
from service.memory.memories import listing, store
from service.memory.recall import pipeline
from service.models import TenantId

SERVICE = Path(sql.__file__).resolve().parents[1]
SESSION_COMMANDS = (
    "SET",
    "RESET",
    "LISTEN",
    "UNLISTEN",
    "PREPARE",
    "DEALLOCATE",
    "DISCARD",
    "LOAD",
    "DECLARE",
)
SESSION_FUNCTIONS = re.compile(
    r"\bpg_(?:try_)?advisory_lock(?:_shared)?\s*\(|\bpg_advisory_unlock|\bdblink_connect",
    re.IGNORECASE,
)


def _without_comments(statement: str) -> str:
    return re.sub(r"--[^\n]*", "", statement)


def _first_words(statement: str) -> list[str]:
    """The leading keyword of every top-level statement (';'-separated)."""
    parts = [part.strip() for part in _without_comments(statement).split(";")]
    return [part.split(None, 1)[0].upper() for part in parts if part]


def _set_config_is_local(statement: str) -> list[str]:
    """The set_config(...) calls whose third argument is not ``true``."""
    calls, text = [], _without_comments(statement)
    for match in re.finditer(r"set_config\s*\(", text, re.IGNORECASE):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        arguments = text[match.end() : end - 1]
        if arguments.rsplit(",", 1)[-1].strip().lower() != "true":
            calls.append(text[match.start() : end])
    return calls


def session_state_problems(name: str, statement: str) -> list[str]:
    """Why ``statement`` would leave state on a pooled server connection (empty: it won't)."""
    problems = [
        f"{name}: starts with {word}"
        for word in _first_words(statement)
        if word in SESSION_COMMANDS
    ]
    problems += [f"{name}: session-level {call}" for call in _set_config_is_local(statement)]
    if SESSION_FUNCTIONS.search(statement):
        problems.append(f"{name}: session advisory lock or connection")
    upper = _without_comments(statement).upper()
    if re.search(r"CREATE\s+(TEMP|TEMPORARY)\b", upper) and "ON COMMIT DROP" not in upper:
        problems.append(f"{name}: temporary table that outlives the transaction")
    if "WITH HOLD" in upper:
        problems.append(f"{name}: cursor WITH HOLD")
    return problems


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("SET app.tenant_id = 'x'", "starts with SET"),
        ("SELECT 1; RESET ALL", "starts with RESET"),
        ("SELECT set_config('role', $1, false)", "session-level"),
        ("SELECT set_config('app.tenant_id', lower($1), false)", "session-level"),
        ("SELECT pg_advisory_lock(42)", "advisory"),
        ("CREATE TEMP TABLE t (x int)", "temporary"),
        ("DECLARE c CURSOR WITH HOLD FOR SELECT 1", "DECLARE"),
        ("LISTEN changes", "LISTEN"),
    ],
)
def test_the_guard_recognises_session_state(statement: str, problem: str) -> None:
    assert any(problem in found for found in session_state_problems("q", statement))


def test_the_guard_passes_transaction_local_statements() -> None:
    local = [
        "SELECT set_config('role', $1, true), set_config('app.tenant_id', $2, true)",
        "UPDATE memories\nSET content = $3 WHERE id = $2",
        "SELECT pg_try_advisory_xact_lock(42)",
        "CREATE TEMP TABLE t (x int) ON COMMIT DROP",
    ]
    assert [p for q in local for p in session_state_problems("q", q)] == []


def test_no_named_query_leaves_state_on_a_pooled_server_connection() -> None:
    problems = [p for name, q in sql.QUERIES.items() for p in session_state_problems(name, q)]
    assert problems == []


def test_no_service_module_sets_session_state_of_its_own() -> None:
    """SQL lives in the .sql files; Python must not send its own SET or startup settings."""
    literal = re.compile(r"""["'](?:SET|RESET|LISTEN|DISCARD|PREPARE)\s+\w""")
    offenders = []
    for path in sorted(SERVICE.rglob("*.py")):
        if "migrations" in path.parts:
            continue  # migrations run on the direct URL, never through the pooler
        source = path.read_text()
        if literal.search(source) or "server_settings" in source:
            offenders.append(str(path.relative_to(SERVICE)))
    assert offenders == []


async def _tenant_work(db: Database, settings: Settings) -> None:
    lib = Library(db, settings)
    tenant = TenantId((await tenants.create_tenant(db, "acme")).id)
    await store.store(lib, tenant, store.StoreRequest("a", {"content": "a pooled fact"}))
    await listing.list_memories(lib, tenant, agent_id="a", project_id=None, limit=5)
    await pipeline.recall(lib, tenant, pipeline.RecallRequest("a", "pooled fact"))
    await contents.get_contents(lib, tenant, "a", ["mem:1", "ep:1"])
    offered = [ledger.Offered("mem", 1, 10, 2, True)]
    await ledger.deliver(lib, tenant, "s", offered, budget=None, look_up=True)
    await pauses.pause(lib, tenant, ttl_seconds=60, by="test")


async def _left_behind(db: Database) -> dict[str, object]:
    async with db.admin_conn() as conn:
        row = await conn.fetchrow(
            """SELECT current_user = session_user AS own_role,
                      coalesce(current_setting('app.tenant_id', true), '') AS tenant,
                      (SELECT count(*) FROM pg_settings WHERE source = 'session') AS settings,
                      (SELECT count(*) FROM pg_locks
                       WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,
                      (SELECT count(*) FROM pg_listening_channels()) AS channels,
                      (SELECT count(*) FROM pg_prepared_statements) AS prepared"""
        )
    assert row is not None
    return dict(row)


@pytest.mark.parametrize("pooler", ["pgbouncer", "none"])
async def test_a_pooled_connection_keeps_no_session_state_after_tenant_work(
    direct_database_url: str, settings: Settings, pooler: DbPooler
) -> None:
    db = await Database(direct_database_url, min_size=1, max_size=1, pooler=pooler).open()
    try:
        await _tenant_work(db, settings)
        left = await _left_behind(db)
    finally:
        await db.close()
    prepared = left.pop("prepared")
    assert left == {"own_role": True, "tenant": "", "settings": 0, "locks": 0, "channels": 0}
    if pooler == "pgbouncer":
        assert prepared == 0
    else:  # asyncpg's statement cache: what PgBouncer 1.18 cannot carry between clients
        assert isinstance(prepared, int)
        assert prepared > 0


@pytest.mark.parametrize("pooler", ["pgbouncer", "none"])
async def test_no_named_query_makes_the_driver_set_session_state(
    direct_database_url: str, pooler: DbPooler
) -> None:
    """asyncpg learns a type on first use with a session-level ``set_config('jit', ...)``.

    Every named query is prepared (its parameter and result types learned) inside a
    committed transaction, as the service's first use of it would be: no setting may be
    left on the session. A query with an array type ``learn_array_codecs`` misses fails.
    """
    db = await Database(direct_database_url, min_size=1, max_size=1, pooler=pooler).open()
    try:
        async with db.admin_tx() as conn:
            for statement in sql.QUERIES.values():
                await conn.prepare(statement)
        async with db.admin_conn() as conn:
            left = await conn.fetch(
                "SELECT name FROM pg_settings WHERE source = 'session' ORDER BY name"
            )
    finally:
        await db.close()
    assert [row["name"] for row in left] == []
