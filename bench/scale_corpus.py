"""Bulk loader for the recall-latency benchmark: synthetic memories straight into Postgres.

Rows are written with binary ``COPY`` (asyncpg ``copy_records_to_table``) as the
database owner into ``memories`` (tenant_id, agent_id, content, embedding,
embedding_model, timestamp_text, timestamp_at, created_at); tenants and agents rows
are created first. Everything is reproducible from a seed:

* text: one to three sentences from templates and word lists; each of the 200 topics
  has its own nouns, so rows of one topic share vocabulary (and long posting lists
  exist for the common words, as in real corpora); unique per agent (the content
  dedup index is unique per agent);
* vectors: 200 random centroids on the 384-d unit sphere; a row is its topic's
  centroid plus gaussian noise of the same norm, normalised (cosine ~0.7 to its
  centroid, ~0.5 between rows of one topic, ~0 across topics);
* ``embedding_model`` is the local model's name and ``embedding_settings`` records
  it, so the service finds nothing to re-embed when it starts.

Indexes stay the production ones: for a large load the secondary indexes of
``memories`` are dropped and re-created afterwards from their own
``pg_get_indexdef`` (the definitions are compared before and after), which is the
ordinary bulk-loading practice and much faster than maintaining HNSW/GIN row by
row. ``VACUUM (ANALYZE)`` runs at the end, so the planner has statistics and the
visibility map is set, as on a settled production table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import re
import struct
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg
import numpy as np
import numpy.typing as npt

from bench import words

if TYPE_CHECKING:
    from service.db.recall import Candidates, Retrieval

SEED = 20261130
DIMENSION = 384  # the local model's width (checked against it when loading)
TOPICS = 200
NAMES = (*words.NAMES, "Amara", "Bjorn", "Carmen", "Dmitri")
PLACES = (
    *words.CITIES,
    "Lagos",
    "Porto",
    "Krakow",
    "Hanoi",
    "Austin",
    "Bergen",
    "Cusco",
    "Dublin",
    "Perth",
    "Quito",
)
DOMAINS = {
    "work": ("deadline", "roadmap", "standup", "budget", "contract", "invoice", "launch"),
    "health": ("allergy", "physio", "dentist", "prescription", "sleep", "migraine", "diet"),
    "food": ("ramen", "sourdough", "espresso", "curry", "tapas", "dumplings", "granola"),
    "travel": ("flight", "visa", "hostel", "layover", "passport", "itinerary", "ferry"),
    "family": ("daughter", "nephew", "grandmother", "wedding", "birthday", "reunion", "twins"),
    "hobby": ("pottery", "climbing", "chess", "guitar", "knitting", "photography", "surfing"),
    "home": ("lease", "plumber", "garden", "mortgage", "heating", "balcony", "furniture"),
    "tech": ("laptop", "router", "backup", "firmware", "keyboard", "monitor", "password"),
    "money": ("savings", "pension", "taxes", "refund", "subscription", "loan", "receipt"),
    "learning": ("course", "exam", "thesis", "lecture", "flashcards", "tutor", "workshop"),
}
VERBS = (
    "booked",
    "cancelled",
    "moved",
    "asked about",
    "forgot",
    "finished",
    "planned",
    "complained about",
    "recommended",
    "paid for",
    "postponed",
    "looked into",
)
WHEN = (
    "on Monday",
    "next week",
    "last weekend",
    "in March",
    "before the holidays",
    "every Friday",
    "tomorrow morning",
    "after lunch",
    "in the autumn",
)
TEMPLATES = (
    "{name} {verb} the {noun} {when}.",
    "{name} prefers the {noun2} over the {noun} since moving to {place}.",
    "Reminder: {name}'s {noun} is due {when}; the {noun2} can wait.",
    "{name} said the {noun} in {place} was better than expected.",
    "{name} and {name2} {verb} the {noun} together {when}.",
    "The {noun} problem came up again; {name} thinks the {noun2} is the cause.",
    "{name} wants to hear about the {noun} {when}, not by email.",
    "{name} spent {amount} euros on the {noun} {when}.",
    "{name} mentioned a new {noun2} and is worried about the {noun}.",
)
FloatArray = npt.NDArray[np.float32]


# --------------------------------------------------------------------------- generation


def topic_words(topic: int) -> tuple[str, ...]:
    """The nouns of a topic: its domain's words, rotated so topics differ in emphasis."""
    words = list(DOMAINS.values())[topic % len(DOMAINS)]
    shift = topic // len(DOMAINS) % len(words)
    return words[shift:] + words[:shift]


def sentence(rng: random.Random, topic: int) -> str:
    """One template sentence about ``topic`` (its nouns), names and places drawn at random."""
    nouns = topic_words(topic)
    name, name2 = rng.sample(NAMES, 2)
    return rng.choice(TEMPLATES).format(
        name=name,
        name2=name2,
        verb=rng.choice(VERBS),
        when=rng.choice(WHEN),
        noun=rng.choice(nouns[:4]),
        noun2=rng.choice(nouns[3:]),
        place=rng.choice(PLACES),
        amount=rng.randint(5, 900),
    )


def memory_text(rng: random.Random, topic: int) -> str:
    """One memory: one to three sentences, the first about ``topic``."""
    extra = [sentence(rng, rng.randrange(TOPICS)) for _ in range(rng.randint(0, 2))]
    return " ".join([sentence(rng, topic), *extra])


def unique_texts(rng: random.Random, topics: Sequence[int], seen: set[str]) -> list[str]:
    """One text per topic, never one already in ``seen`` (the agent's texts so far)."""
    out = []
    for topic in topics:
        text = memory_text(rng, topic)
        for attempt in range(1, 1000):
            if text not in seen:
                break
            text = f"{memory_text(rng, topic)} (#{attempt})"
        seen.add(text)
        out.append(text)
    return out


def centroids(seed: int = SEED) -> FloatArray:
    """``TOPICS`` random unit vectors of ``DIMENSION`` dimensions."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((TOPICS, DIMENSION), dtype=np.float32)
    unit: FloatArray = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    return unit


def clustered(rng: np.random.Generator, centres: FloatArray, topics: Sequence[int]) -> FloatArray:
    """Unit vectors: each topic's centroid plus noise of unit expected norm, normalised."""
    noise = rng.standard_normal((len(topics), DIMENSION), dtype=np.float32)
    noise /= np.float32(np.sqrt(DIMENSION))
    rows = centres[np.asarray(topics)] + noise
    unit: FloatArray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def vector_bytes(rows: FloatArray) -> list[bytes]:
    """pgvector's binary form of each row (dimension, unused, big-endian float4s)."""
    header = struct.pack(">HH", rows.shape[1], 0)
    raw = rows.astype(">f4").tobytes()
    width = rows.shape[1] * 4
    return [header + raw[i * width : (i + 1) * width] for i in range(rows.shape[0])]


# --------------------------------------------------------------------------- loading

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
    """``rows`` memories for agent ``agent`` of tenant ``tenant`` (slug)."""

    tenant: str
    agent: str
    rows: int


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
    from service.memory.embeddings import local

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


async def load_agent(
    conn: asyncpg.Connection[Any], plan: AgentLoad, seed: int, centres: FloatArray, model: str
) -> None:
    """COPY one agent's rows (creating its tenant and agent rows first)."""
    tenant = await ensure_tenant(conn, plan.tenant)
    agent = await ensure_agent(conn, tenant, plan.agent)
    for texts, vectors, stamps in _batches(plan, seed, centres):
        records = [
            (tenant, agent, text, vector, model, stamp.isoformat(), stamp, stamp)
            for text, vector, stamp in zip(texts, vectors, stamps, strict=True)
        ]
        await conn.copy_records_to_table("memories", records=records, columns=COLUMNS)


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
) -> LoadReport:
    """Load every plan; with ``rebuild_indexes`` drop and re-create the secondary indexes
    around the COPY. Ends with ``VACUUM (ANALYZE)`` of the touched tables."""
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
            await load_agent(conn, plan, seed, centres, model)
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


# --------------------------------------------------------------------------- inspection

PLAN_NAME = "bench_recall_plan"
WARM_EXECUTIONS = 8  # past Postgres's 5 custom plans, so the plan cache has decided
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
    """Inside a transaction: become the application role with ``slug``'s tenant set (RLS)."""
    tenant: uuid.UUID = await conn.fetchval("SELECT id FROM tenants WHERE slug = $1", slug)
    await conn.execute(
        "SELECT set_config('role', 'cpersona_app', true), set_config('app.tenant_id', $1, true)",
        str(tenant),
    )
    return tenant


def retrieval(text: str, vector: Sequence[float]) -> Retrieval:
    """The service's ``Retrieval`` for a plain recall (limit 10, no filters) of ``text``.

    Built field by field from the service's own dataclass (defaults as configured by
    default), so a new required field fails loudly here instead of silently measuring
    another statement.
    """
    from service.db import recall as store
    from service.memory.recall import query_terms

    terms = query_terms.build(text)
    known: dict[str, Any] = {
        "vector": list(vector),
        "tsquery": terms.tsquery,
        "patterns": list(terms.patterns),
        "lexemes": list(getattr(terms, "lexemes", ())),
        "limit": 10,
        "episodes": True,
        "recency": False,
        "confidence": False,
    }
    fields = dataclasses.fields(store.Retrieval)
    missing = dataclasses.MISSING
    return store.Retrieval(
        **{f.name: known[f.name] for f in fields if f.name in known or f.default is missing}
    )


class _Captured(Exception):
    """Raised by :class:`_Capture` once it has the statement (nothing is executed)."""


class _Capture:
    """Stands in for a connection: records the statement and arguments of one fetch."""

    def __init__(self) -> None:
        self.sql = ""
        self.args: list[Any] = []

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        self.sql, self.args = sql, list(args)
        raise _Captured


async def candidates(
    conn: Any, tenant: uuid.UUID, agent: str, text: str, vector: Sequence[float]
) -> Candidates:
    """``recall_candidates`` of the service for one query.

    ``conn`` is an asyncpg connection or a :class:`_Capture` standing in for one (only
    ``fetch`` is called), hence ``Any``.
    """
    from service.db import recall as store
    from service.models import TenantId

    scope = store.Scope(agent, None, "", None)
    return await store.recall_candidates(conn, TenantId(tenant), scope, retrieval(text, vector))


async def production_call(
    tenant: uuid.UUID, agent: str, text: str, vector: Sequence[float]
) -> tuple[str, list[Any]]:
    """The statement and arguments the service would send for this recall."""
    capture = _Capture()
    with contextlib.suppress(_Captured):
        await candidates(capture, tenant, agent, text, vector)
    if not capture.sql:
        raise RuntimeError("the service ran no statement")
    return capture.sql, capture.args


async def _literals(conn: asyncpg.Connection[Any], args: Sequence[Any]) -> str:
    """The arguments as SQL literals quoted by Postgres (``quote_nullable``)."""
    out = []
    for value in args:
        if isinstance(value, list) and (not value or isinstance(value[0], str)):
            text = await conn.fetchval("SELECT ($1::text[])::text", value)
        elif isinstance(value, list):
            text = "[" + ",".join(f"{x:.7g}" for x in value) + "]"
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = None if value is None else str(value)
        out.append(await conn.fetchval("SELECT quote_nullable($1::text)", text))
    return ", ".join(out)


async def _prepare_plan(conn: asyncpg.Connection[Any], sql: str) -> None:
    """``PREPARE`` the service's statement with the parameter types Postgres infers."""
    oids = [t.oid for t in (await conn.prepare(sql)).get_parameters()]
    types = await conn.fetchval(
        "SELECT string_agg(format_type(o, NULL), ', ' ORDER BY n) FROM unnest($1::oid[])"
        " WITH ORDINALITY AS u(o, n)",
        oids,
    )
    await conn.execute(f"PREPARE {PLAN_NAME} ({types}) AS {sql}")


async def explain_recall(
    url: str, slug: str, agent: str, queries: Sequence[tuple[str, Sequence[float]]]
) -> dict[str, str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the recall statement as the service runs it.

    The statement is prepared (as asyncpg does) and executed ``WARM_EXECUTIONS``
    times, so the plan shown is the one the plan cache settled on ("chosen"); the
    forced custom and generic plans are recorded next to it.
    """
    conn = await asyncpg.connect(url)
    plans: dict[str, str] = {}
    try:
        async with conn.transaction():
            tenant = await as_tenant(conn, slug)
            calls = [await production_call(tenant, agent, t, v) for t, v in queries]
            await _prepare_plan(conn, calls[0][0])
            literals = [await _literals(conn, args) for _, args in calls]
            for literal in literals[:WARM_EXECUTIONS]:
                await conn.execute(f"EXECUTE {PLAN_NAME} ({literal})")
            for mode in ("chosen", "force_custom_plan", "force_generic_plan"):
                if mode != "chosen":
                    await conn.execute(f"SET LOCAL plan_cache_mode = {mode}")
                rows = await conn.fetch(
                    f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE {PLAN_NAME} ({literals[-1]})"
                )
                plans[mode] = LONG_VECTOR.sub("'[...384 floats...]'", "\n".join(r[0] for r in rows))
    finally:
        await conn.close()
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

    Rows returned (want 10: an agent filter applied after an approximate index scan can
    starve it), overlap with the exact 10 nearest, and the ratio of their mean
    similarities (1.0 = as close as the exact answer; meaningful with query vectors
    drawn from the corpus distribution, where near ties make the overlap pessimistic).
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
                overlap.append(len(ann.keys() & exact.keys()) / max(1, len(exact)))
                best = sum(exact.values()) / max(1, len(exact))
                ratio.append(sum(ann.values()) / max(1, len(exact)) / best if best > 0 else 1.0)
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
