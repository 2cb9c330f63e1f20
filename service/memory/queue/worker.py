"""The queue worker: embeds queued rows in batches, safe with several workers.

``drain_once`` / ``run_worker`` claim due jobs with ``FOR UPDATE SKIP LOCKED`` as a
lease, read the rows' text per tenant, embed the batch outside any transaction, then
write the vectors and delete the jobs in one statement per tenant. A vector is written
only if the row's text still hashes to what was embedded, and a job is settled only if
its claim token (the leased ``run_after``) still matches, so an edit or a re-claim in the
meantime is never overwritten with stale data. Failures back off exponentially, capped
(``CPERSONA_TASK_RETRY_DELAY * 2^min(attempts, CPERSONA_TASK_MAX_RETRIES)``), and a job
is retried for as long as the provider fails: no row is ever given up, so every row is
embedded once the provider is back. Each tenant's texts are embedded for that tenant,
so the circuit breaker accounts a failure to it: one tenant's texts that the provider
refuses open that tenant's circuit only (its jobs then wait for it), never the shared
one. While the shared circuit is open the worker does not call the provider (nor claim
jobs); a job it could not even try is handed back without counting an attempt."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

from service.db import queue as queue_queries
from service.db.queue import ItemKind, ItemText, Job
from service.embeddings.base import EmbeddingError, ModelIntegrityError
from service.errors import ConfigError
from service.logs import get_logger
from service.memory.library import Library
from service.memory.queue import backlog
from service.memory.queue.embedding import Embedded, Failure, ItemKey, embed_jobs, key_of
from service.models import TenantId

log = get_logger("service.embeddings")


LEASE_MARGIN_SECS = 30.0


@dataclasses.dataclass(frozen=True, slots=True)
class DrainResult:
    """What one batch did: claimed jobs and how each ended."""

    claimed: int = 0
    embedded: int = 0
    dropped: int = 0
    requeued: int = 0
    failed: int = 0
    """Jobs whose attempt failed or that could not be attempted (they stay queued)."""
    passages: int = 0
    """Passages written with the embedded rows."""


def _lease_seconds(lib: Library) -> float:
    return 2 * lib.settings.embedding_timeout_secs + LEASE_MARGIN_SECS


async def _claim(lib: Library, tenant_id: TenantId | None, limit: int) -> list[Job]:
    async with lib.db.admin_tx() as conn:
        return await queue_queries.claim_embedding_jobs(conn, limit, _lease_seconds(lib), tenant_id)


def _by_tenant(jobs: Sequence[Job]) -> dict[TenantId, list[Job]]:
    groups: dict[TenantId, list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.tenant_id, []).append(job)
    return groups


async def _load_texts(lib: Library, jobs: Sequence[Job]) -> dict[ItemKey, ItemText]:
    """The current text of every claimed row that still exists (tenant transactions)."""
    texts: dict[ItemKey, ItemText] = {}
    for tenant_id, group in _by_tenant(jobs).items():
        memory_ids = [job.item_id for job in group if job.item_kind == "mem"]
        episode_ids = [job.item_id for job in group if job.item_kind == "ep"]
        async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
            for item in await queue_queries.embedding_texts(
                conn, tenant_id, memory_ids, episode_ids
            ):
                texts[(tenant_id, item.kind, item.id)] = item
    return texts


async def _settle_tenant(
    lib: Library,
    tenant_id: TenantId,
    jobs: Sequence[Job],
    vectors: dict[ItemKey, Embedded],
    model: str,
) -> tuple[int, int, int, int]:
    """Write one tenant's vectors and passages and settle its jobs in one transaction (one
    statement).

    Returns (embedded, dropped, requeued, passages)."""
    found = [vectors.get(_key(job)) for job in jobs]
    items = [None if item is None else (item.text, item.vector) for item in found]
    passages = [p for item in found if item is not None for p in item.passages]
    async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
        settled = await queue_queries.settle_embeddings(
            conn,
            tenant_id,
            jobs,
            items,
            model,
            passages,
            passages_on=lib.settings.passages_enabled,
        )
    dropped = sum(1 for item in items if item is None)
    requeued = len(jobs) - settled.embedded - dropped
    return settled.embedded, dropped, requeued, settled.passages


def _key(job: Job) -> ItemKey:
    return key_of(job)


def _keys(jobs: Sequence[Job]) -> list[ItemKey]:
    return [_key(job) for job in jobs]


async def _fail(lib: Library, failed: Sequence[tuple[Job, Failure]]) -> None:
    """Back off the jobs whose attempt failed; hand back, uncounted, those not attempted."""
    settings = lib.settings
    tried = [(job, failure.error) for job, failure in failed if failure.attempted]
    groups = [(tried, float(settings.task_retry_delay), True)]
    for tenant_id, untried in _untried_by_tenant(failed).items():
        retry_in = max(lib.breaker.retry_in(str(tenant_id)), settings.worker_poll_secs)
        groups.append((untried, retry_in, False))
    async with lib.db.admin_tx() as conn:
        for group, wait, attempted in groups:
            if group:
                jobs, errors = [job for job, _ in group], [error for _, error in group]
                await queue_queries.fail_embedding_jobs(
                    conn, jobs, errors, wait, settings.task_max_retries, attempted=attempted
                )
    for job, error in tried:
        if job.attempts + 1 == settings.task_max_retries:  # once per job, not every retry
            log.warning(
                "embedding job keeps failing; retried every "
                f"{settings.task_retry_delay * 2**settings.task_max_retries} s",
                tenant=str(job.tenant_id),
                ref=f"{job.item_kind}:{job.item_id}",
                attempts=job.attempts + 1,
                error=error,
            )


def _untried_by_tenant(
    failed: Sequence[tuple[Job, Failure]],
) -> dict[TenantId, list[tuple[Job, str]]]:
    """The jobs the breaker did not let through, by tenant (each waits for its circuit)."""
    groups: dict[TenantId, list[tuple[Job, str]]] = {}
    for job, failure in failed:
        if not failure.attempted:
            groups.setdefault(job.tenant_id, []).append((job, failure.error))
    return groups


async def drain_once(
    lib: Library, *, tenant_id: TenantId | None = None, limit: int | None = None
) -> DrainResult:
    """Claim, embed and settle one batch of due jobs (of one tenant when given)."""
    if lib.embedder is None:
        return DrainResult()
    return await _run_jobs(lib, await _claim(lib, tenant_id, limit or lib.settings.worker_batch))


async def drain_items(lib: Library, items: Sequence[ItemKey]) -> DrainResult:
    """Claim, embed and settle the jobs of ``items`` (rows this process just wrote);
    items whose job another worker holds, or that have none, are left alone.

    Each tenant's jobs are claimed and their texts read in one statement (one tenant
    transaction), so the batch costs that, the model call and the settling transaction.
    """
    if lib.embedder is None or not items:
        return DrainResult()
    jobs: list[Job] = []
    texts: dict[ItemKey, ItemText] = {}
    for tenant_id, wanted in _items_by_tenant(items).items():
        async with lib.db.tenant_tx(tenant_id, cached_plans=True) as conn:
            claimed = await queue_queries.claim_embedding_items(
                conn, tenant_id, wanted, _lease_seconds(lib)
            )
        for job, item in claimed:
            jobs.append(job)
            if item is not None:
                texts[_key(job)] = item
    return await _run_jobs(lib, jobs, texts)


def _items_by_tenant(items: Sequence[ItemKey]) -> dict[TenantId, list[tuple[ItemKind, int]]]:
    groups: dict[TenantId, list[tuple[ItemKind, int]]] = {}
    for tenant_id, kind, item_id in items:
        groups.setdefault(tenant_id, []).append((kind, item_id))
    return groups


async def _run_jobs(
    lib: Library, jobs: list[Job], texts: dict[ItemKey, ItemText] | None = None
) -> DrainResult:
    """Embed claimed ``jobs`` in one batch and settle them (or back them off); ``texts``
    are their rows' texts when the claim read them (else they are read here)."""
    provider = lib.embedder
    if provider is None or not jobs:
        return DrainResult()
    if texts is None:
        texts = await _load_texts(lib, jobs)
    present = [job for job in jobs if _key(job) in texts]
    vectors, failed = await embed_jobs(lib, present, [texts[_key(job)] for job in present])
    failed_ids = {job.id for job, _ in failed}
    totals = [0, 0, 0, 0]
    for group_tenant, group in _by_tenant(jobs).items():
        settled = [job for job in group if job.id not in failed_ids]
        if settled:
            counts = await _settle_tenant(lib, group_tenant, settled, vectors, provider.name)
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
    if failed:
        await _fail(lib, failed)
    return DrainResult(len(jobs), totals[0], totals[1], totals[2], len(failed), totals[3])


async def _drain_logged(lib: Library) -> DrainResult:
    """One batch; a database or programming error is logged and the loop goes on."""
    try:
        result = await drain_once(lib)
    except Exception:  # the worker must outlive a database restart or a bad row
        log.exception("embedding batch failed")
        return DrainResult()
    if result.claimed:
        log.info("embedding batch", **dataclasses.asdict(result))
    return result


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def run_worker(lib: Library, stop: asyncio.Event, *, model_recorded: bool = False) -> None:
    """Drain the queue until ``stop`` is set; the batch in progress always finishes.

    First queues rows stored without a vector while embeddings or the queue were
    off. Polls every ``CPERSONA_WORKER_POLL_SECS`` while idle and goes straight on
    while batches come back full; while the provider's breaker is open it waits for
    the breaker instead of claiming jobs it could not embed. Unless ``model_recorded``
    (``start_up`` did it), the model is recorded first, retried every round until the
    database takes it.
    """
    if lib.embedder is None:
        log.info("embeddings are off (CPERSONA_EMBEDDING_MODE=none); the worker idles")
        await stop.wait()
        return
    synced = model_recorded
    await _sweep_logged(lib)
    poll = lib.settings.worker_poll_secs
    while not stop.is_set():
        if not synced:
            synced = await _sync_logged(lib)
        if lib.breaker.retry_in() > 0:
            await _pause(stop, min(max(lib.breaker.retry_in(), 0.01), max(poll, 1.0)))
            continue
        result = await _drain_logged(lib)
        if result.claimed < lib.settings.worker_batch or result.failed:
            await _pause(stop, poll)


async def _sweep_logged(lib: Library) -> None:
    """Queue rows stored without a vector while embeddings or the queue were off, and long
    rows whose passages were never built for their text (the passage backfill)."""
    if not lib.settings.task_queue_enabled:
        return
    try:
        added = await backlog.enqueue_unembedded(lib)
    except Exception:  # the drain loop still runs; the next start sweeps again
        log.exception("queueing unembedded rows failed")
        return
    if added:
        log.info("queued rows stored without an embedding", queued=added)
    try:
        passages = await backlog.enqueue_passages(lib)
    except Exception:  # the drain loop still runs; the next start goes on where it was
        log.exception("queueing the passage backfill failed")
        return
    if passages:
        log.info("queued long rows for their passages", queued=passages)


async def _sync_logged(lib: Library) -> bool:
    try:
        return await backlog.sync_model(lib)
    except Exception:  # retried on the next round
        log.exception("recording the embedding model failed")
        return False


async def start_up(lib: Library) -> bool:
    """Load the local model (so the first write does not pay for it) and record the
    model, queueing re-embeds on a change. Returns whether the model is recorded.

    A local model that fails its integrity check stops the start (ConfigError); a
    database error while recording only logs (the worker records the model later).
    """
    provider = lib.embedder
    if provider is None:
        return True
    load = getattr(provider, "load", None)
    try:
        if load is not None:
            await load()
    except ModelIntegrityError as exc:
        raise ConfigError(f"CPERSONA_EMBEDDING_MODE=local: {exc}") from exc
    except EmbeddingError as exc:
        log.warning("embedding provider not ready", error=str(exc))
    return await _sync_logged(lib)


async def drain_until_empty(
    lib: Library,
    tenant_id: TenantId | None,
    on_progress: Callable[[queue_queries.Backlog], None],
) -> queue_queries.Backlog:
    """Drain (alongside any other worker) until no job of the scope is left; a provider
    that is down is waited for (jobs are retried with their backoff, never given up).
    Returns the final backlog."""
    while True:
        result = await drain_once(lib, tenant_id=tenant_id)
        remaining = await backlog.backlog(lib, tenant_id)
        on_progress(remaining)
        if remaining.pending == 0:
            return remaining
        if result.claimed == 0 or result.failed:
            await asyncio.sleep(max(lib.settings.worker_poll_secs, lib.breaker.retry_in()))
