"""Bulk loader for the recall-latency benchmark: synthetic memories straight into Postgres.

Rows are written with binary ``COPY`` (asyncpg ``copy_records_to_table``) as the
database owner into ``memories`` (tenant_id, agent_id, content, embedding,
embedding_model, timestamp_text, timestamp_at, created_at); tenants and agents rows
are created first. Texts and vectors come from :mod:`bench.latency.synthetic` (reproducible
from a seed); ``embedding_model`` is the local model's name and ``embedding_settings``
records it, so the service finds nothing to re-embed when it starts.

Indexes stay the production ones: for a large load the secondary indexes of
``memories`` are dropped and re-created afterwards from their own
``pg_get_indexdef`` (the definitions are compared before and after), which is the
ordinary bulk-loading practice and much faster than maintaining HNSW/GIN row by
row. ``VACUUM (ANALYZE)`` runs at the end, so the planner has statistics and the
visibility map is set, as on a settled production table.

What the loaded corpus looks like to the service's recall statement (EXPLAIN, the
vector channel against brute force) is :mod:`bench.latency.plans`.
"""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import numpy as np

from bench.latency.synthetic import (
    DIMENSION,
    SEED,
    TOPICS,
    FloatArray,
    centroids,
    clustered,
    unique_texts,
    vector_bytes,
)

BATCH = 5_000
COLUMNS = (
    "tenant_id",
    "agent_id",
    "content",
    "embedding",
    "embedding_model",
    "timestamp_text",
    "timestamp_at",
    "created_at",
)
EPOCH = datetime(2026, 11, 1, tzinfo=UTC)
SPAN_DAYS = 730


# --------------------------------------------------------------------------- plans


@dataclasses.dataclass(frozen=True)
class AgentLoad:
    """``rows`` memories for agent ``agent`` of tenant ``tenant`` (slug). With
    ``projects``, the rows' ``project_id`` cycles through them in load order (``""`` is the
    global pool); without, every row is in the global pool (the column's default).

    The projects are written by the COPY itself: a later ``UPDATE`` of ``project_id``
    would rewrite every row (the column is in the isolation indexes, so no update is HOT)
    and insert each new version into every index one by one, HNSW included, which at
    100k rows takes longer than the whole load."""

    tenant: str
    agent: str
    rows: int
    projects: tuple[str, ...] = ()


def spread(
    total: int, tenants: int, agents_per_tenant: int, prefix: str = "scale"
) -> list[AgentLoad]:
    """``total`` rows evenly over ``tenants * agents_per_tenant`` agents."""
    count = tenants * agents_per_tenant
    base, extra = divmod(total, count)
    return [
        AgentLoad(
            f"{prefix}-t{t:03d}",
            f"agent-{a:02d}",
            base + (1 if t * agents_per_tenant + a < extra else 0),
        )
        for t in range(tenants)
        for a in range(agents_per_tenant)
    ]


# --------------------------------------------------------------------------- loading


async def connect(url: str) -> asyncpg.Connection[Any]:
    """An owner connection whose ``vector`` codec takes pre-encoded binary values."""
    conn: asyncpg.Connection[Any] = await asyncpg.connect(url)
    await conn.set_type_codec(
        "vector", schema="public", encoder=bytes, decoder=bytes, format="binary"
    )
    await conn.execute("SET synchronous_commit = off")
    return conn


async def ensure_tenant(conn: asyncpg.Connection[Any], slug: str) -> uuid.UUID:
    tenant: uuid.UUID = await conn.fetchval(
        "INSERT INTO tenants (slug, name) VALUES ($1, 'Benchmark') "
        "ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id",
        slug,
    )
    return tenant


async def ensure_agent(conn: asyncpg.Connection[Any], tenant: uuid.UUID, name: str) -> int:
    agent: int = await conn.fetchval(
        "INSERT INTO agents (tenant_id, name) VALUES ($1, $2) "
        "ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name RETURNING id",
        tenant,
        name,
    )
    return agent


def local_model() -> str:
    """The name the service records next to vectors of its local model (imported late,
    so a benchmark can point ``sys.path`` at a snapshot of the service first)."""
    from service.embeddings import local

    if local.DIMENSION != DIMENSION:
        raise RuntimeError(f"the local model has {local.DIMENSION} dimensions, not {DIMENSION}")
    return local.MODEL_NAME


async def record_model(conn: asyncpg.Connection[Any], model: str) -> None:
    """Record the local model as the deployment's, refusing a database that has another."""
    await conn.execute(
        "INSERT INTO embedding_settings (id, model, dimension) VALUES (true, $1, $2) "
        "ON CONFLICT (id) DO NOTHING",
        model,
        DIMENSION,
    )
    row = await conn.fetchrow("SELECT model, dimension FROM embedding_settings")
    if row is None or (row["model"], row["dimension"]) != (model, DIMENSION):
        raise RuntimeError(f"database records another embedding model: {dict(row or {})}")


def _seeds(seed: int, plan: AgentLoad) -> tuple[random.Random, np.random.Generator]:
    label = f"{seed}/{plan.tenant}/{plan.agent}"
    return random.Random(label), np.random.default_rng(list(label.encode()))


def _batches(
    plan: AgentLoad, seed: int, centres: FloatArray
) -> Iterator[tuple[list[str], list[bytes], list[datetime]]]:
    """The agent's rows in batches: texts, binary vectors, timestamps."""
    rng, nrng = _seeds(seed, plan)
    seen: set[str] = set()
    for start in range(0, plan.rows, BATCH):
        topics = [rng.randrange(TOPICS) for _ in range(min(BATCH, plan.rows - start))]
        texts = unique_texts(rng, topics, seen)
        stamps = [EPOCH - timedelta(seconds=rng.randrange(SPAN_DAYS * 86_400)) for _ in topics]
        yield texts, vector_bytes(clustered(nrng, centres, topics)), stamps


Batches = Callable[
    [AgentLoad, int, FloatArray], Iterator[tuple[list[str], list[bytes], list[datetime]]]
]
"""Where an agent's rows come from: the synthetic corpus, or bench.latency.corpus's."""


def _project_column(plan: AgentLoad, start: int, count: int) -> list[tuple[str, ...]]:
    """Per row of a batch starting at row ``start``: its project (one value), or nothing
    when the plan has no projects (the column is then left to its default)."""
    if not plan.projects:
        return [()] * count
    cycle = plan.projects
    return [(cycle[(start + i) % len(cycle)],) for i in range(count)]


async def load_agent(
    conn: asyncpg.Connection[Any],
    plan: AgentLoad,
    seed: int,
    centres: FloatArray,
    model: str,
    batches: Batches | None = None,
) -> None:
    """COPY one agent's rows (creating its tenant and agent rows first)."""
    tenant = await ensure_tenant(conn, plan.tenant)
    agent = await ensure_agent(conn, tenant, plan.agent)
    columns = COLUMNS + (("project_id",) if plan.projects else ())
    start = 0
    for texts, vectors, stamps in (batches or _batches)(plan, seed, centres):
        projects = _project_column(plan, start, len(texts))
        records = [
            (tenant, agent, text, vector, model, stamp.isoformat(), stamp, stamp, *project)
            for text, vector, stamp, project in zip(texts, vectors, stamps, projects, strict=True)
        ]
        await conn.copy_records_to_table("memories", records=records, columns=columns)
        start += len(texts)


# --------------------------------------------------------------------------- indexes


@dataclasses.dataclass(frozen=True)
class IndexDef:
    name: str
    definition: str
    comment: str | None


async def secondary_indexes(conn: asyncpg.Connection[Any]) -> list[IndexDef]:
    """Indexes of ``memories`` that back no constraint (all but the primary key)."""
    rows = await conn.fetch(
        "SELECT i.relname, pg_get_indexdef(i.oid) AS def, obj_description(i.oid, 'pg_class') AS c "
        "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE x.indrelid = 'memories'::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.oid) "
        "ORDER BY i.relname"
    )
    return [IndexDef(r["relname"], r["def"], r["c"]) for r in rows]


async def _run_formatted(conn: asyncpg.Connection[Any], template: str, *values: str) -> None:
    """Run a utility statement built by Postgres's own ``format`` (%I / %L quoting)."""
    statement = await conn.fetchval(
        "SELECT format($1::text, VARIADIC $2::text[])", template, list(values)
    )
    await conn.execute(statement)


async def drop_indexes(conn: asyncpg.Connection[Any], indexes: Sequence[IndexDef]) -> None:
    for index in indexes:
        await _run_formatted(conn, "DROP INDEX %I", index.name)


async def build_indexes(
    conn: asyncpg.Connection[Any], indexes: Sequence[IndexDef], memory: str
) -> dict[str, float]:
    """Re-create ``indexes`` from their definitions and comments; seconds per index."""
    await _run_formatted(conn, "SET maintenance_work_mem = %L", memory)
    await conn.execute("SET max_parallel_maintenance_workers = 1")
    seconds = {}
    for index in indexes:
        started = time.perf_counter()
        await conn.execute(index.definition)
        if index.comment is not None:
            await _run_formatted(conn, "COMMENT ON INDEX %I IS %L", index.name, index.comment)
        seconds[index.name] = round(time.perf_counter() - started, 1)
    if await secondary_indexes(conn) != list(indexes):
        raise RuntimeError("re-created indexes differ from the production definitions")
    return seconds


# --------------------------------------------------------------------------- whole loads


@dataclasses.dataclass
class LoadReport:
    rows: int
    copy_seconds: float = 0.0
    index_seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    vacuum_analyze_seconds: float = 0.0
    total_seconds: float = 0.0
    table_mb: float = 0.0
    indexes_mb: dict[str, float] = dataclasses.field(default_factory=dict)


async def _sizes(conn: asyncpg.Connection[Any], report: LoadReport) -> None:
    report.table_mb = round(await conn.fetchval("SELECT pg_table_size('memories')") / 2**20, 1)
    rows = await conn.fetch(
        "SELECT c.relname, pg_relation_size(c.oid) AS size FROM pg_index x "
        "JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = 'memories'::regclass"
    )
    report.indexes_mb = {r["relname"]: round(r["size"] / 2**20, 1) for r in rows}


async def load(
    url: str,
    plans: Sequence[AgentLoad],
    *,
    rebuild_indexes: bool,
    seed: int = SEED,
    maintenance_memory: str = "3GB",
    batches: Batches | None = None,
) -> LoadReport:
    """Load every plan (rows from ``batches``, default the synthetic corpus); with
    ``rebuild_indexes`` drop and re-create the secondary indexes around the COPY. Ends with
    ``VACUUM (ANALYZE)`` of the touched tables."""
    report = LoadReport(rows=sum(p.rows for p in plans))
    started = time.perf_counter()
    conn = await connect(url)
    try:
        model = local_model()
        await record_model(conn, model)
        indexes = await secondary_indexes(conn)
        if rebuild_indexes:
            await drop_indexes(conn, indexes)
        centres = centroids(seed)
        for plan in plans:
            await load_agent(conn, plan, seed, centres, model, batches)
        report.copy_seconds = round(time.perf_counter() - started, 1)
        if rebuild_indexes:
            report.index_seconds = await build_indexes(conn, indexes, maintenance_memory)
        mark = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) memories, agents, tenants")
        report.vacuum_analyze_seconds = round(time.perf_counter() - mark, 1)
        await _sizes(conn, report)
    finally:
        await conn.close()
    report.total_seconds = round(time.perf_counter() - started, 1)
    return report
