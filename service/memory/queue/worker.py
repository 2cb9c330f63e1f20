"""The queue worker: embeds queued rows in batches, safe with several workers.

``drain_once`` / ``run_worker`` claim due jobs with ``FOR UPDATE SKIP LOCKED`` as a
lease, read the rows' text per tenant, embed the batch outside any transaction, then
write the vectors and delete the jobs in one transaction per tenant. A vector is written
only if the row's text still hashes to what was embedded, and a job is settled only if
its claim token (the leased ``run_after``) still matches, so an edit or a re-claim in the
meantime is never overwritten with stale data. Failures back off exponentially
(``CPERSONA_TASK_RETRY_DELAY * 2^attempts``); jobs at ``CPERSONA_TASK_MAX_RETRIES``
stay in the table for inspection and are no longer claimed."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Sequence

from service.db import queue as store
from service.db.queue import ItemKind, ItemText, Job
from service.errors import ConfigError
from service.logs import get_logger
from service.memory.embeddings.base import EmbeddingError, EmbeddingProvider, ModelIntegrityError
from service.memory.library import Library
from service.memory.queue import backlog
from service.memory.queue.inline import embed_checked
from service.models import TenantId

log = get_logger("service.embeddings")


LEASE_MARGIN_SECS = 30.0


Outcome = list[float] | str  # a unit vector, or why there is none


ItemKey = tuple[TenantId, ItemKind, int]


@dataclasses.dataclass(frozen=True, slots=True)
class DrainResult:
    """What one batch did: claimed jobs and how each ended."""

    claimed: int = 0
    embedded: int = 0
    dropped: int = 0
    requeued: int = 0
    failed: int = 0


def _lease_seconds(lib: Library) -> float:
    return 2 * lib.settings.embedding_timeout_secs + LEASE_MARGIN_SECS


async def _claim(lib: Library, tenant_id: TenantId | None, limit: int) -> list[Job]:
    settings = lib.settings
    async with lib.db.admin_tx() as conn:
        return await store.claim_embedding_jobs(
            conn, limit, settings.task_max_retries, _lease_seconds(lib), tenant_id
        )


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
        async with lib.db.tenant_tx(tenant_id) as conn:
            for item in await store.embedding_texts(conn, tenant_id, memory_ids, episode_ids):
                texts[(tenant_id, item.kind, item.id)] = item
    return texts


async def _embed_outcomes(
    lib: Library, provider: EmbeddingProvider, texts: list[str]
) -> list[Outcome]:
    """One outcome per text. A failed batch is retried text by text only when a single
    text embeds (the provider is up, so one bad text must not fail its neighbours)."""
    if not texts:
        return []
    timeout = lib.settings.embedding_timeout_secs + 5.0
    try:
        return list(await embed_checked(provider, texts, timeout))
    except EmbeddingError as exc:
        if len(texts) == 1:
            return [str(exc)]
    outcomes: list[Outcome] = []
    for position, text in enumerate(texts):
        try:
            outcomes.append((await embed_checked(provider, [text], timeout))[0])
        except EmbeddingError as exc:
            if position == 0:  # even one text fails: the provider is down
                return [str(exc)] * len(texts)
            outcomes.append(str(exc))
    return outcomes


async def _settle_tenant(
    lib: Library,
    tenant_id: TenantId,
    jobs: Sequence[Job],
    vectors: dict[ItemKey, tuple[ItemText, list[float]]],
    model: str,
) -> tuple[int, int, int]:
    """Write one tenant's vectors and settle its jobs in one transaction.

    Returns (embedded, dropped, requeued)."""
    items = [vectors[key] for key in _keys(jobs) if key in vectors]
    async with lib.db.tenant_tx(tenant_id) as conn:
        stored = await store.store_embeddings(
            conn, tenant_id, [i for i, _ in items], [v for _, v in items], model
        )
        done = [job.item_id in stored or _key(job) not in vectors for job in jobs]
        await store.settle_embedding_jobs(conn, tenant_id, jobs, done)
    embedded = sum(1 for job in jobs if job.item_id in stored)
    dropped = sum(1 for job in jobs if _key(job) not in vectors)
    return embedded, dropped, len(jobs) - embedded - dropped


def _key(job: Job) -> ItemKey:
    return (job.tenant_id, job.item_kind, job.item_id)


def _keys(jobs: Sequence[Job]) -> list[ItemKey]:
    return [_key(job) for job in jobs]


async def _fail(lib: Library, jobs: Sequence[Job], errors: Sequence[str]) -> None:
    settings = lib.settings
    async with lib.db.admin_tx() as conn:
        await store.fail_embedding_jobs(conn, jobs, errors, float(settings.task_retry_delay))
    for job, error in zip(jobs, errors, strict=True):
        if job.attempts + 1 >= settings.task_max_retries:
            log.warning(
                "embedding job gave up",
                tenant=str(job.tenant_id),
                ref=f"{job.item_kind}:{job.item_id}",
                attempts=job.attempts + 1,
                error=error,
            )


async def drain_once(
    lib: Library, *, tenant_id: TenantId | None = None, limit: int | None = None
) -> DrainResult:
    """Claim, embed and settle one batch of due jobs (of one tenant when given)."""
    provider = lib.embedder
    if provider is None:
        return DrainResult()
    jobs = await _claim(lib, tenant_id, limit or lib.settings.worker_batch)
    if not jobs:
        return DrainResult()
    texts = await _load_texts(lib, jobs)
    present = [job for job in jobs if _key(job) in texts]
    outcomes = await _embed_outcomes(lib, provider, [texts[_key(job)].text for job in present])
    vectors: dict[ItemKey, tuple[ItemText, list[float]]] = {}
    failed: list[tuple[Job, str]] = []
    for job, outcome in zip(present, outcomes, strict=True):
        if isinstance(outcome, str):
            failed.append((job, outcome[:500]))
        else:
            vectors[_key(job)] = (texts[_key(job)], outcome)
    failed_ids = {job.id for job, _ in failed}
    totals = [0, 0, 0]
    for group_tenant, group in _by_tenant(jobs).items():
        settled = [job for job in group if job.id not in failed_ids]
        if settled:
            counts = await _settle_tenant(lib, group_tenant, settled, vectors, provider.name)
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
    if failed:
        await _fail(lib, [job for job, _ in failed], [error for _, error in failed])
    return DrainResult(len(jobs), totals[0], totals[1], totals[2], len(failed))


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
    while batches come back full. Unless ``model_recorded`` (``start_up`` did it), the
    model is recorded as soon as its width is known, which for an HTTP provider
    unreachable at start-up is after its first successful batch.
    """
    provider = lib.embedder
    if provider is None:
        log.info("embeddings are off (CPERSONA_EMBEDDING_MODE=none); the worker idles")
        await stop.wait()
        return
    synced = model_recorded
    await _sweep_logged(lib)
    while not stop.is_set():
        if not synced and provider.dimension:
            synced = await _sync_logged(lib)
        result = await _drain_logged(lib)
        if not synced and provider.dimension:
            synced = await _sync_logged(lib)
        if result.claimed < lib.settings.worker_batch:
            await _pause(stop, lib.settings.worker_poll_secs)


async def _sweep_logged(lib: Library) -> None:
    """Queue rows stored without a vector while embeddings or the queue were off."""
    if not lib.settings.task_queue_enabled:
        return
    try:
        added = await backlog.enqueue_unembedded(lib)
    except Exception:  # the drain loop still runs; the next start sweeps again
        log.exception("queueing unembedded rows failed")
        return
    if added:
        log.info("queued rows stored without an embedding", queued=added)


async def _sync_logged(lib: Library) -> bool:
    try:
        return await backlog.sync_model(lib)
    except Exception:  # retried on the next round
        log.exception("recording the embedding model failed")
        return False


async def start_up(lib: Library) -> bool:
    """Load the local model (so the first write does not pay for it) and record the
    model, queueing re-embeds on a change. Returns whether the model is recorded.

    A provider that is down only logs (the worker records the model later); a
    local model that fails its integrity check stops the start (ConfigError).
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
    on_progress: Callable[[store.Backlog], None],
) -> store.Backlog:
    """Drain (alongside any other worker) until no job of the scope is left to run;
    returns the final backlog (its ``failed`` jobs reached the retry limit)."""
    while True:
        result = await drain_once(lib, tenant_id=tenant_id)
        remaining = await backlog.backlog(lib, tenant_id)
        on_progress(remaining)
        if remaining.pending == 0:
            return remaining
        if result.claimed == 0:
            await asyncio.sleep(lib.settings.worker_poll_secs)
