"""The embedding backlog: ``get_queue_status``, model recording and re-embed enqueueing.

``queue_status`` is CPersona's shape (docs/tools.md, "Tool reference") for the caller's tenant only,
plus two additive fields (``retrying``: jobs whose last attempt failed, waiting for their
retry; ``oldest_pending_seconds``: the age of the oldest job). No job is ever given
up: a row is retried with capped exponential backoff for as long as the provider
fails (``max_retries`` is how often the delay doubles). It reports
``{enabled:false, pending:0}`` when nothing would ever drain a queue: embeddings off
or ``CPERSONA_TASK_QUEUE_ENABLED`` false.

``sync_model`` compares the provider's model and declared width with the
deployment's recorded ones (``embedding_settings``). A change of either, or the
first record, queues every row whose vector is missing, from another model or of
another width, tenant by tenant in id-ordered batches (``INSERT ... SELECT ... ON
CONFLICT DO NOTHING``), and records the model only afterwards: a crash half-way
re-detects the change at the next start and the enqueueing is idempotent. Nothing
is wiped; old vectors of the same width stay searchable until replaced, and recall
ignores other widths by ``embedding_dim``.
"""

from __future__ import annotations

import dataclasses

from service.db import queue as queue_queries, tenants as tenants_queries
from service.db.queue import ItemText
from service.errors import NotFound
from service.logs import get_logger
from service.memory.library import Library
from service.memory.passages import plan as passage_plan
from service.models import TenantId

log = get_logger("service.embeddings")
ENQUEUE_BATCH = 5_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ActiveQueue:
    """A draining queue: jobs still to run, those waiting for a retry, the age of the
    oldest job (None without any), and the retry policy in force."""

    pending: int
    retrying: int
    oldest_pending_seconds: float | None
    max_retries: int
    retry_delay: int
    passages_pending: int = 0
    """Pending jobs of rows longer than one window, whose passages are built with them
    (docs/architecture.md, "Passages")."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class QueueStatus:
    """The tenant's embedding backlog. ``active`` is None when nothing would ever drain a
    queue (embeddings off or the task queue disabled): there is then no backlog to
    describe and nothing pending."""

    active: ActiveQueue | None


async def queue_status(lib: Library, tenant_id: TenantId) -> QueueStatus:
    """The tenant's embedding backlog (``get_queue_status``, docs/tools.md, "Tool reference")."""
    if not lib.queue_enabled:
        return QueueStatus(active=None)
    settings = lib.settings
    async with lib.db.tenant_tx(tenant_id) as conn:
        backlog = await queue_queries.queue_status(conn, tenant_id, _fits(lib))
    return QueueStatus(
        active=ActiveQueue(
            pending=backlog.pending,
            retrying=backlog.retrying,
            oldest_pending_seconds=backlog.oldest_pending_seconds,
            max_retries=settings.task_max_retries,
            retry_delay=settings.task_retry_delay,
            passages_pending=backlog.passages_pending,
        )
    )


def _fits(lib: Library) -> int | None:
    """The most characters of a text that cannot need passages; None when passages are
    off (none are pending then)."""
    if lib.embedder is None or not lib.settings.passages_enabled:
        return None
    return passage_plan.window_chars(lib)


async def backlog(lib: Library, tenant_id: TenantId | None = None) -> queue_queries.Backlog:
    """Jobs still to run, those retrying and those that build passages, of one tenant or
    all (operator view, /metrics)."""
    async with lib.db.admin_tx() as conn:
        return await queue_queries.queue_backlog(conn, tenant_id, _fits(lib))


async def tenant_by_slug(lib: Library, slug: str) -> TenantId:
    async with lib.db.admin_tx() as conn:
        row = await tenants_queries.tenant_by_slug(conn, slug)
    if row is None:
        raise NotFound(f"no tenant {slug!r}")
    return TenantId(row.id)


async def _tenants(lib: Library, tenant_id: TenantId | None) -> list[TenantId]:
    if tenant_id is not None:
        return [tenant_id]
    async with lib.db.admin_tx() as conn:
        return await queue_queries.tenant_ids(conn)


async def enqueue_reembed(
    lib: Library, tenant_id: TenantId | None = None, *, every_row: bool, reset: bool
) -> int:
    """Queue rows whose vector is missing, from another model or of another width (every
    row with ``every_row``); ``reset`` also makes existing jobs due again at once.
    Returns how many jobs were added or reset."""
    provider = lib.embedder
    if provider is None:
        return 0
    added = 0
    for tenant in await _tenants(lib, tenant_id):
        cursor: int | None = 0
        while cursor is not None:
            async with lib.db.tenant_tx(tenant) as conn:
                batch = await queue_queries.enqueue_reembed(
                    conn,
                    tenant,
                    cursor,
                    ENQUEUE_BATCH,
                    model=provider.name,
                    dimension=provider.dimension,
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
                batch = await queue_queries.enqueue_unembedded(conn, tenant, cursor, ENQUEUE_BATCH)
            cursor, added = batch.cursor, added + batch.added
    return added


PASSAGE_BATCH = 500
"""Rows the passage backfill reads per statement. Smaller than :data:`ENQUEUE_BATCH`:
it returns the texts of its candidates (a long row can hold 16,000 characters), to be
measured before any job is queued."""


async def enqueue_passages(lib: Library, tenant_id: TenantId | None = None) -> int:
    """The passage backfill (docs/architecture.md, "Passages"): queue every row whose
    passages were never built for its current text and that needs some, tenant by tenant
    in id-ordered batches of ``PASSAGE_BATCH`` rows read. A candidate (longer than one
    window's characters) is measured first, as its job would divide it: one that fits
    one window after all is marked done without a job, since a job embeds the row's own
    text again besides its passages (after a bulk load of rows with their vectors that
    was most of the work for nothing). Each batch reads in one short transaction and
    writes in another; online and resumable: rows done (or already queued) are skipped,
    so a run cut short is simply run again. Nothing when passages are off. Returns the
    jobs queued."""
    if lib.embedder is None or not lib.settings.passages_enabled:
        return 0
    fits = passage_plan.window_chars(lib)
    added = 0
    for tenant in await _tenants(lib, tenant_id):
        cursor: int | None = 0
        while cursor is not None:
            async with lib.db.tenant_tx(tenant) as conn:
                batch = await queue_queries.passage_candidates(
                    conn, tenant, cursor, PASSAGE_BATCH, fits
                )
            cursor = batch.cursor
            added += await _queue_or_mark(lib, tenant, batch.rows)
    return added


async def _queue_or_mark(lib: Library, tenant: TenantId, rows: list[ItemText]) -> int:
    """Queue the ``rows`` their division gives passages, mark the others done; returns
    the jobs queued."""
    if not rows:
        return 0
    spans = await passage_plan.plan(lib, [row.text for row in rows])
    needing = [row for row, parts in zip(rows, spans, strict=True) if parts]
    fitting = [row for row, parts in zip(rows, spans, strict=True) if not parts]
    async with lib.db.tenant_tx(tenant) as conn:
        await queue_queries.passages_fit(conn, tenant, fitting)
        return await queue_queries.enqueue_passage_jobs(conn, tenant, needing)


async def vacuum_rewritten(lib: Library) -> None:
    """Vacuum the tables a re-embed and the passage backfill rewrite (``reembed``, once its
    jobs are drained): each embedding written and each backfill mark is an update that
    leaves the row's old version in every index of ``memories``, so recall reads past
    them until a vacuum (at 10,000 LoCoMo turns, 12 % of them marked: the lexical
    statement 4.0 ms against 2.5 after it; docs/reliability.md). Run by the command, not
    by a serving process's worker, whose pool connection it would hold for as long as
    the tables take."""
    async with lib.db.admin_conn() as conn:
        await queue_queries.vacuum_rewritten(conn)


async def queue_passages_after_bulk(lib: Library, tenant_id: TenantId) -> None:
    """After an import or a merge committed rows with their vectors (no job), queue the
    long ones' passages: the tenant's backfill. A failure only logs: the next queue
    worker start runs the backfill again."""
    try:
        queued = await enqueue_passages(lib, tenant_id)
    except Exception:  # the rows are written; their passages wait for the next sweep
        log.exception("queueing passages after a bulk write failed")
        return
    if queued:
        log.info("queued long rows for their passages", queued=queued)


async def sync_model(lib: Library) -> bool:
    """Record the provider's model and declared width; on a change queue the re-embeds
    first. The provider is never called: its width is declared, not learned.

    With the queue disabled a change is logged but not recorded, so it is handled at
    the first start with the queue on (or by ``cpersona-service reembed``).
    """
    provider = lib.embedder
    if provider is None:
        return True
    async with lib.db.admin_tx() as conn:
        recorded = await queue_queries.embedding_settings(conn)
    current = queue_queries.ModelRecord(provider.name, provider.dimension)
    if recorded == current:
        return True
    if recorded is not None:
        old = f"{recorded.model}/{recorded.dimension}"
        log.warning("embedding model changed", old=old, new=f"{current.model}/{current.dimension}")
    if not lib.settings.task_queue_enabled:
        log.warning("task queue disabled: rows are not re-embedded and the model not recorded")
        return True
    queued = await enqueue_reembed(lib, every_row=False, reset=False)
    async with lib.db.admin_tx() as conn:
        await queue_queries.record_embedding_settings(conn, current.model, current.dimension)
    log.info(
        "embedding model recorded", model=current.model, dimension=current.dimension, queued=queued
    )
    return True
