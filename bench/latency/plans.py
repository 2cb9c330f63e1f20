"""What a loaded corpus looks like to the service's recall statements.

The recall statements are run exactly as the service runs them: the service's own db
function builds the arguments and executes them (recorded as they run, for EXPLAIN; or
read, for the vector-channel check against brute force). The service is imported late, so
a benchmark can point ``sys.path`` at its code snapshot first.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from tests.recall_statements import candidates, parameter_types, production_calls, sql_literals

PLAN_NAME = "bench_recall_plan"
WARM_EXECUTIONS = 8  # past Postgres's 5 custom plans, so the plan cache has decided
TIE_TOLERANCE = 1e-6
"""Similarities closer than this count as a tie (float4 vectors, float8 arithmetic)."""
LONG_VECTOR = re.compile(r"'\[[-0-9.e,]{200,}\]'")


async def open_service_conn(url: str) -> asyncpg.Connection[Any]:
    """An owner connection with the codecs the service's pool registers."""
    from pgvector.asyncpg import register_vector

    conn: asyncpg.Connection[Any] = await asyncpg.connect(url)
    for kind in ("jsonb", "json"):
        await conn.set_type_codec(kind, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await register_vector(conn)
    return conn


async def as_tenant(conn: asyncpg.Connection[Any], slug: str) -> uuid.UUID:
    """Inside a transaction: enter ``slug``'s tenant exactly as a default recall does (the
    service's ``enter_tenant`` with the default settings: application role, RLS tenant,
    HNSW iterative scan and search breadth, planner costs, and generic plans where the
    service's code runs them; a code snapshot from before them plans per call)."""
    from service.db.pool import Database
    from service.models import TenantId

    tenant: uuid.UUID = await conn.fetchval("SELECT id FROM tenants WHERE slug = $1", slug)
    db = Database("unused")
    generic = "generic_plans" in inspect.signature(db.entering).parameters
    entering = db.entering(TenantId(tenant), **({"generic_plans": True} if generic else {}))
    await conn.execute(*entering)
    return tenant


async def _prepare_plan(conn: asyncpg.Connection[Any], sql: str) -> None:
    """``PREPARE`` the service's statement with the parameter types Postgres infers."""
    types = ", ".join(await parameter_types(conn, sql))
    await conn.execute(f"PREPARE {PLAN_NAME} ({types}) AS {sql}")


async def explain_recall(
    url: str, slug: str, agent: str, queries: Sequence[tuple[str, Sequence[float]]]
) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the recall statements as the service runs them.

    Each statement is prepared (as asyncpg does) and executed ``WARM_EXECUTIONS``
    times, so the plan shown is the one the plan cache settled on ("chosen"); the
    forced custom and generic plans are recorded next to it. The first statement's
    plans are keyed by mode; a later statement's by mode and its number ("chosen 2").
    """
    conn = await open_service_conn(url)
    plans: dict[str, str] = {}
    try:
        async with conn.transaction():
            tenant = await as_tenant(conn, slug)
            recalls = [await production_calls(conn, tenant, agent, t, v) for t, v in queries]
            for number in range(len(recalls[0])):
                calls = [calls[number] for calls in recalls]
                suffix = "" if number == 0 else f" {number + 1}"
                for mode, plan in (await _explain(conn, calls)).items():
                    plans[mode + suffix] = plan
    finally:
        await conn.close()
    return plans


async def _explain(
    conn: asyncpg.Connection[Any], calls: list[tuple[str, list[Any]]]
) -> dict[str, str]:
    """The chosen, forced custom and forced generic plans of one statement."""
    await _prepare_plan(conn, calls[0][0])
    literals = [await sql_literals(conn, sql, args) for sql, args in calls]
    for literal in literals[:WARM_EXECUTIONS]:
        await conn.execute(f"EXECUTE {PLAN_NAME} ({literal})")
    entered = await conn.fetchval("SELECT current_setting('plan_cache_mode')")
    plans: dict[str, str] = {}
    for mode in ("chosen", "force_custom_plan", "force_generic_plan"):
        if mode != "chosen":
            await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
        rows = await conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE {PLAN_NAME} ({literals[-1]})")
        plans[mode] = LONG_VECTOR.sub("'[...384 floats...]'", "\n".join(r[0] for r in rows))
    await conn.execute("SELECT set_config('plan_cache_mode', $1, true)", entered)
    await conn.execute(f"DEALLOCATE {PLAN_NAME}")
    return plans


async def index_scans(url: str) -> dict[str, int]:
    """``idx_scan`` of every index of ``memories`` (pg_stat_user_indexes)."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relname = 'memories'"
        )
    finally:
        await conn.close()
    return {r["indexrelname"]: int(r["idx_scan"]) for r in rows}


async def vector_channel_check(
    url: str, slug: str, agents: Sequence[str], queries: Sequence[tuple[str, Sequence[float]]]
) -> dict[str, Any]:
    """What the service's statement returns on its vector channel, against brute force.

    Rows returned (want at least 10: an agent filter applied after an approximate index
    scan can starve it); ``recall_vs_exact``, the share of the channel's 10 most similar
    rows that are at least as similar as the exact 10th nearest (ties count: a corpus of
    near-copies has many rows equally close, and which of them an exact sort lists is
    arbitrary); and ``similarity_ratio``, the mean similarity of those 10 over the exact
    10's (1.0 = as close as the exact answer).
    """
    conn = await open_service_conn(url)
    found, overlap, ratio = [], [], []
    try:
        async with conn.transaction():
            tenant = await as_tenant(conn, slug)
            for index, (text, vector) in enumerate(queries):
                agent = agents[index % len(agents)]
                hits = (await candidates(conn, tenant, agent, text, vector)).hits
                ann = {
                    h.id: h.score or 0.0 for h in hits if h.channel == "vector" and h.kind == "mem"
                }
                exact = await _exact_nearest(conn, tenant, agent, vector)
                found.append(len(ann))
                recall, similarity = versus_exact(list(ann.values()), list(exact.values()))
                overlap.append(recall)
                ratio.append(similarity)
    finally:
        await conn.close()
    n = max(1, len(found))
    return {
        "queries": len(found),
        "min_vector_rows": min(found, default=0),
        "mean_vector_rows": round(sum(found) / n, 2),
        "recall_vs_exact": round(sum(overlap) / n, 3),
        "similarity_ratio": round(sum(ratio) / n, 3),
    }


def versus_exact(
    found: Sequence[float], exact: Sequence[float], k: int = 10
) -> tuple[float, float]:
    """``(recall, similarity ratio)`` of the ``k`` best ``found`` similarities against the
    ``exact`` nearest ones: the share at least as similar as the exact k-th (ties count),
    and their mean over the exact mean (``(1.0, 1.0)`` when there is nothing to find)."""
    truth = sorted(exact, reverse=True)[:k]
    if not truth:
        return 1.0, 1.0
    best = sorted(found, reverse=True)[: len(truth)]
    kth = truth[-1] - TIE_TOLERANCE
    recall = sum(1 for s in best if s >= kth) / len(truth)
    mean = sum(truth) / len(truth)
    return recall, (sum(best) / len(truth)) / mean if mean > 0 else 1.0


async def _exact_nearest(
    conn: asyncpg.Connection[Any], tenant: uuid.UUID, agent: str, vector: Sequence[float]
) -> dict[int, float]:
    """The agent's 10 nearest rows by brute force (index scans off): id -> similarity."""
    await conn.execute("SET LOCAL enable_indexscan = off")
    rows = await conn.fetch(
        "SELECT m.id, -(m.embedding::vector(384) <#> $3::vector(384)) AS score"
        " FROM memories m JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id"
        " WHERE m.tenant_id = $1 AND a.name = $2 AND m.embedding_dim = 384"
        " ORDER BY m.embedding::vector(384) <#> $3::vector(384) LIMIT 10",
        tenant,
        agent,
        list(vector),
    )
    await conn.execute("SET LOCAL enable_indexscan = on")
    return {int(r["id"]): float(r["score"]) for r in rows}


async def memory_rows(url: str) -> int:
    """How many rows ``memories`` holds (every tenant)."""
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM memories"))
    finally:
        await conn.close()
