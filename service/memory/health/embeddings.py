"""Embedding checks: vectors of the wrong width, rows without a vector, the queue's
stale jobs, and a configured width that has no approximate-nearest-neighbour index.

Repairs never call the embedding provider: they clear wrong vectors and put rows on
the durable queue (``embedding_jobs``), which the worker drains outside any request.
So a fix run holds its transaction only for database writes, and a provider that is
down cannot stall or fail it.
"""

from __future__ import annotations

from service.db.health import embeddings as embeddings_queries
from service.db.health.embeddings import ItemKind
from service.db.pool import Connection
from service.memory.health.base import Findings, Repairs, Scope
from service.memory.passages.plan import ESTIMATED_WINDOW

NULL_CRITICAL_RATIO = 0.5
NO_PROVIDER_HINT = (
    "no embedding provider is configured (CPERSONA_EMBEDDING_MODE=none): recall is "
    "lexical only and rows without a vector are the expected steady state"
)
QUEUED_HINT = (
    "every such row is already queued; if the count does not fall, check that a worker "
    "drains the queue (`cpersona-service worker`, or `serve` on the embedded database) "
    "and that the embedding provider answers"
)


async def embedding_dimension(conn: Connection, scope: Scope) -> Findings | None:
    """Vectors whose width is not the configured provider's: no index or query of
    that width reaches them, so vector recall silently misses the rows."""
    if not scope.provider or scope.dimension is None:
        return None
    found = await embeddings_queries.health_dimension_mismatch(
        conn, scope.tenant_id, scope.agent, scope.dimension
    )
    if found.memories + found.episodes == 0:
        return None
    return {
        "type": "embedding_dimension_mismatch",
        "count": found.memories + found.episodes,
        "memories": found.memories,
        "episodes": found.episodes,
        "expected_dim": scope.dimension,
        "repairable": found.repairable,
    }


async def fix_embedding_dimension(conn: Connection, scope: Scope) -> Repairs:
    assert scope.dimension is not None
    cleared = await embeddings_queries.health_clear_wrong_dimension(
        conn, scope.tenant_id, scope.agent, scope.dimension, scope.provider
    )
    return Repairs(fixed=cleared, enqueued=cleared)


def _null_severity(scope: Scope, missing: int, total: int) -> str:
    if not scope.provider:
        return "info"
    if total and missing / total > NULL_CRITICAL_RATIO:
        return "critical"
    return "warn"


async def _null_issue(conn: Connection, scope: Scope, kind: ItemKind, name: str) -> Findings | None:
    found = await embeddings_queries.health_embedding_coverage(
        conn, scope.tenant_id, scope.agent, kind
    )
    if found.missing == 0:
        return None
    issue: Findings = {
        "type": name,
        "severity": _null_severity(scope, found.missing, found.total),
        "count": found.missing,
        "total": found.total,
        "queued": found.missing - found.unqueued,
        "repairable": found.unqueued if scope.provider else 0,
    }
    if not scope.provider:
        issue["hint"] = NO_PROVIDER_HINT
    elif found.unqueued == 0:
        issue["hint"] = QUEUED_HINT
    return issue


async def null_embedding(conn: Connection, scope: Scope) -> Findings | None:
    """Memories without a vector (recall finds them only lexically). Critical when a
    provider is configured and more than half are missing: vector recall is down."""
    return await _null_issue(conn, scope, "mem", "null_embedding")


async def fix_null_embedding(conn: Connection, scope: Scope) -> Repairs:
    added = await embeddings_queries.health_enqueue_unembedded(
        conn, scope.tenant_id, scope.agent, "mem"
    )
    return Repairs(fixed=added, enqueued=added)


async def null_episode_embedding(conn: Connection, scope: Scope) -> Findings | None:
    """Episodes without a vector; same rules as null_embedding."""
    return await _null_issue(conn, scope, "ep", "null_episode_embedding")


async def fix_null_episode_embedding(conn: Connection, scope: Scope) -> Repairs:
    added = await embeddings_queries.health_enqueue_unembedded(
        conn, scope.tenant_id, scope.agent, "ep"
    )
    return Repairs(fixed=added, enqueued=added)


async def stale_pending_tasks(conn: Connection, scope: Scope) -> Findings | None:
    """Queue jobs older than an hour or at the retry limit: the worker is not keeping up,
    is not running, or the provider keeps failing (the jobs' last_error says why)."""
    limit = scope.settings.task_max_retries
    found = await embeddings_queries.health_stale_jobs(conn, scope.tenant_id, scope.agent, limit)
    if found.count == 0:
        return None
    return {
        "type": "stale_pending_tasks",
        "count": found.count,
        "dead": found.dead,
        "orphaned": found.orphaned,
        "max_retries": limit,
        "repairable": found.count,
    }


async def fix_stale_pending_tasks(conn: Connection, scope: Scope) -> Repairs:
    """Drop jobs with nothing left to do (row gone or embedded, or no provider) and
    re-arm the rest as fresh jobs, so rows are retried instead of forgotten."""
    limit = scope.settings.task_max_retries
    done = await embeddings_queries.health_settle_stale_jobs(
        conn, scope.tenant_id, scope.agent, limit, scope.provider
    )
    return Repairs(fixed=done.deleted + done.rearmed, deleted=done.deleted, requeued=done.rearmed)


async def vector_fallback_config(conn: Connection, scope: Scope) -> Findings | None:
    """A configured width without an HNSW index: vector recall still answers (an exact
    scan over every embedded row) but gets slower as the tenant grows."""
    if not scope.provider or scope.dimension is None:
        return None
    widths = await embeddings_queries.health_ann_index_widths(conn)
    if scope.dimension in widths:
        return None
    return {
        "type": "no_ann_index_for_dimension",
        "dimension": scope.dimension,
        "indexed_dimensions": widths,
        "hint": (
            "vector recall of this width scans every embedded row; add a partial HNSW "
            "index for it (a migration) or use a model of an indexed width"
        ),
    }


async def missing_passages(conn: Connection, scope: Scope) -> Findings | None:
    """Embedded rows longer than one window whose passages were never built for their
    text (docs/architecture.md, "Passages"): recall scores them by their first window
    only. Nothing when no provider is configured or passages are off."""
    if not scope.provider or not scope.settings.passages_enabled:
        return None
    found = await embeddings_queries.health_missing_passages(
        conn, scope.tenant_id, scope.agent, ESTIMATED_WINDOW
    )
    if found.missing == 0:
        return None
    issue: Findings = {
        "type": "missing_passages",
        "count": found.missing,
        "queued": found.missing - found.unqueued,
        "repairable": found.unqueued,
    }
    if found.unqueued == 0:
        issue["hint"] = QUEUED_HINT
    return issue


async def fix_missing_passages(conn: Connection, scope: Scope) -> Repairs:
    added = await embeddings_queries.health_enqueue_passages(
        conn, scope.tenant_id, scope.agent, ESTIMATED_WINDOW
    )
    return Repairs(fixed=added, enqueued=added)
