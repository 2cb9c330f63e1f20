"""The embedding backlog: ``get_queue_status``, model recording and re-embed enqueueing.

``queue_status`` is CPersona's shape (spec §2.1) for the caller's tenant only, plus
two additive fields (``failed``: jobs that reached the retry limit and are no longer
tried; ``oldest_pending_seconds``). It reports ``{enabled:false, pending:0}`` when
nothing would ever drain a queue: embeddings off or ``CPERSONA_TASK_QUEUE_ENABLED``
false.

``sync_model`` compares the provider with the deployment's recorded model
(``embedding_settings``). A change, or the first record, queues every row whose
vector is missing or from another model, tenant by tenant in id-ordered batches
(``INSERT ... SELECT ... ON CONFLICT DO NOTHING``), and records the model only
afterwards: a crash half-way re-detects the change at the next start and the
enqueueing is idempotent. Nothing is wiped; old vectors of the same width stay
searchable until replaced, and recall ignores other widths by ``embedding_dim``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from service.db import queue as store, tenants as tenant_store
from service.errors import NotFound
from service.logs import get_logger
from service.memory.embeddings.base import EmbeddingError
from service.memory.library import Library
from service.models import TenantId

log = get_logger("service.embeddings")
ENQUEUE_BATCH = 5_000
PROBE_TIMEOUT_SECS = 5.0


async def queue_status(lib: Library, tenant_id: TenantId) -> dict[str, Any]:
    """The tenant's embedding backlog (spec ``get_queue_status``)."""
    if not lib.queue_enabled:
        return {"enabled": False, "pending": 0}
    settings = lib.settings
    async with lib.db.tenant_tx(tenant_id) as conn:
        backlog = await store.queue_status(conn, tenant_id, settings.task_max_retries)
    oldest = backlog.oldest_pending_seconds
    return {
        "enabled": True,
        "pending": backlog.pending,
        "max_retries": settings.task_max_retries,
        "retry_delay": settings.task_retry_delay,
        "failed": backlog.failed,
        "oldest_pending_seconds": None if oldest is None else round(oldest, 1),
    }


async def backlog(lib: Library, tenant_id: TenantId | None = None) -> store.Backlog:
    """Jobs still to run and jobs given up, of one tenant or all (operator view)."""
    async with lib.db.admin_tx() as conn:
        return await store.queue_backlog(conn, tenant_id, lib.settings.task_max_retries)


async def tenant_by_slug(lib: Library, slug: str) -> TenantId:
    async with lib.db.admin_tx() as conn:
        row = await tenant_store.tenant_by_slug(conn, slug)
    if row is None:
        raise NotFound(f"no tenant {slug!r}")
    return TenantId(row.id)


async def _tenants(lib: Library, tenant_id: TenantId | None) -> list[TenantId]:
    if tenant_id is not None:
        return [tenant_id]
    async with lib.db.admin_tx() as conn:
        return await store.tenant_ids(conn)


async def enqueue_reembed(
    lib: Library, tenant_id: TenantId | None = None, *, every_row: bool, reset: bool
) -> int:
    """Queue rows whose vector is missing or from another model (every row with
    ``every_row``); ``reset`` also makes existing and given-up jobs due again.
    Returns how many jobs were added or reset."""
    provider = lib.embedder
    if provider is None:
        return 0
    added = 0
    for tenant in await _tenants(lib, tenant_id):
        cursor: int | None = 0
        while cursor is not None:
            async with lib.db.tenant_tx(tenant) as conn:
                batch = await store.enqueue_reembed(
                    conn,
                    tenant,
                    cursor,
                    ENQUEUE_BATCH,
                    model=provider.name,
                    every_row=every_row,
                    reset=reset,
                )
            cursor, added = batch.cursor, added + batch.added
    return added


async def enqueue_unembedded(lib: Library) -> int:
    """Queue rows stored without a vector and without a job (while embeddings or the
    queue were off); cheap, through the partial indexes on unembedded rows."""
    added = 0
    for tenant in await _tenants(lib, None):
        cursor: int | None = 0
        while cursor is not None:
            async with lib.db.tenant_tx(tenant) as conn:
                batch = await store.enqueue_unembedded(conn, tenant, cursor, ENQUEUE_BATCH)
            cursor, added = batch.cursor, added + batch.added
    return added


async def _dimension(lib: Library) -> int:
    """The provider's width, asking it once when it learns the width from a response."""
    provider = lib.embedder
    if provider is None:
        return 0
    if provider.dimension:
        return provider.dimension
    try:
        await asyncio.wait_for(provider.embed(["dimension probe"]), PROBE_TIMEOUT_SECS)
    except (EmbeddingError, TimeoutError) as exc:
        log.warning("embedding provider unreachable; model recorded later", error=str(exc))
    return provider.dimension


async def sync_model(lib: Library) -> bool:
    """Record the provider's model and width; on a change queue the re-embeds first.

    Returns False when the width is not known yet (nothing recorded). With the
    queue disabled a change is logged but not recorded, so it is handled at the
    first start with the queue on (or by ``cpersona-service reembed``).
    """
    provider = lib.embedder
    if provider is None:
        return True
    dimension = await _dimension(lib)
    if not dimension:
        return False
    async with lib.db.admin_tx() as conn:
        recorded = await store.embedding_settings(conn)
    current = store.ModelRecord(provider.name, dimension)
    if recorded == current:
        return True
    if recorded is not None:
        old = f"{recorded.model}/{recorded.dimension}"
        log.warning("embedding model changed", old=old, new=f"{current.model}/{dimension}")
    if not lib.settings.task_queue_enabled:
        log.warning("task queue disabled: rows are not re-embedded and the model not recorded")
        return True
    queued = await enqueue_reembed(lib, every_row=False, reset=False)
    async with lib.db.admin_tx() as conn:
        await store.record_embedding_settings(conn, current.model, current.dimension)
    log.info("embedding model recorded", model=current.model, dimension=dimension, queued=queued)
    return True
