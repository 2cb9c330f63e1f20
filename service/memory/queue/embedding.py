"""Embedding a batch of claimed jobs: each row's text and its passages in one provider
call (docs/architecture.md, "Passages"), one outcome per job.

Each tenant's texts are embedded for that tenant, so the circuit breaker accounts a
failure to it; a failed batch is retried text by text only when the provider is up. A
job whose text or any of its passages failed fails as a whole: its row keeps what it
had and the job is retried (``worker``'s backoff)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

from service.db.queue import ItemKind, ItemText, Job, PassageVector
from service.embeddings.base import EmbeddingError, ProviderUnavailable
from service.memory.library import Library
from service.memory.passages import plan as passage_plan
from service.memory.queue.inline import embed_checked
from service.models import TenantId

ItemKey = tuple[TenantId, ItemKind, int]


def key_of(job: Job) -> ItemKey:
    return (job.tenant_id, job.item_kind, job.item_id)


@dataclasses.dataclass(frozen=True, slots=True)
class Failure:
    """Why a text has no vector; ``attempted`` is False when the provider was not called."""

    error: str
    attempted: bool = True

    @classmethod
    def of(cls, exc: EmbeddingError) -> Failure:
        return cls(str(exc)[:500], not isinstance(exc, ProviderUnavailable))


Outcome = list[float] | Failure


async def _embed_all(lib: Library, jobs: Sequence[Job], texts: list[str]) -> list[Outcome]:
    """One outcome per job's text. Each tenant's texts are embedded for that tenant (the
    breaker accounts its failures to it), all tenants at once, so the batcher still
    combines them into one provider call and, when the provider refuses it, tries each
    tenant's part on its own."""
    groups: dict[TenantId, list[int]] = {}
    for position, job in enumerate(jobs):
        groups.setdefault(job.tenant_id, []).append(position)
    results = await asyncio.gather(
        *(
            _embed_outcomes(lib, tenant_id, [texts[p] for p in positions])
            for tenant_id, positions in groups.items()
        )
    )
    outcomes: list[Outcome] = [Failure("not embedded")] * len(texts)
    for positions, result in zip(groups.values(), results, strict=True):
        for position, outcome in zip(positions, result, strict=True):
            outcomes[position] = outcome
    return outcomes


def _bound(lib: Library, count: int) -> float:
    """Seconds ``count`` texts may take: one call's bound (the provider's timeout and 5 s)
    for every provider call of at most ``CPERSONA_EMBEDDING_BATCH_SIZE`` texts they need.
    A batch of long rows is a row and each of its passages (docs/architecture.md,
    "Passages"): 32 rows of 16,000 characters are some 600 texts, which a bound of one call
    would time out part way, to retry them text by text and send them twice."""
    calls = -(-count // lib.settings.embedding_batch_size)
    return (lib.settings.embedding_timeout_secs + 5.0) * calls


async def _embed_outcomes(lib: Library, tenant_id: TenantId, texts: list[str]) -> list[Outcome]:
    """One outcome per text of ``tenant_id``. A failed batch is retried text by text only
    when a single text embeds (the provider is up, so one bad text must not fail its
    neighbours); otherwise every text carries the batch's failure (an attempt, unless
    the breaker did not let the batch through)."""
    if not texts:
        return []
    timeout = _bound(lib, len(texts))
    try:
        return list(await embed_checked(lib, tenant_id, texts, timeout, lane="write"))
    except EmbeddingError as exc:
        batch = Failure.of(exc)
    if len(texts) == 1 or not batch.attempted or lib.breaker.retry_in(str(tenant_id)) > 0:
        return [batch] * len(texts)
    outcomes: list[Outcome] = []
    for position, text in enumerate(texts):
        try:
            one = await embed_checked(lib, tenant_id, [text], _bound(lib, 1), lane="write")
            outcomes.append(one[0])
        except EmbeddingError as exc:
            if position == 0:  # even one text fails: the provider is down
                return [batch] * len(texts)
            outcomes.append(Failure.of(exc))
    return outcomes


@dataclasses.dataclass(frozen=True, slots=True)
class Embedded:
    """A row's text with its vector and its passages' vectors."""

    text: ItemText
    vector: list[float]
    passages: list[PassageVector]


async def embed_jobs(
    lib: Library, jobs: Sequence[Job], items: Sequence[ItemText]
) -> tuple[dict[ItemKey, Embedded], list[tuple[Job, Failure]]]:
    """Embed each job's text and its passages (docs/architecture.md, "Passages") in one
    batch. A job whose text or any passage failed fails as a whole (its row keeps what it
    had, the job is retried)."""
    spans = await passage_plan.plan(lib, [item.text for item in items])
    owners: list[int] = []
    flat: list[str] = []
    for position, item in enumerate(items):
        owners.append(position)
        flat.append(item.text)
        for span in spans[position]:
            owners.append(position)
            flat.append(item.text[span.start : span.end])
    outcomes = await _embed_all(lib, [jobs[owner] for owner in owners], flat)
    per_job: list[list[Outcome]] = [[] for _ in jobs]
    for owner, outcome in zip(owners, outcomes, strict=True):
        per_job[owner].append(outcome)
    vectors: dict[ItemKey, Embedded] = {}
    failed: list[tuple[Job, Failure]] = []
    for job, item, job_spans, results in zip(jobs, items, spans, per_job, strict=True):
        failure = next((r for r in results if isinstance(r, Failure)), None)
        if failure is not None:
            failed.append((job, failure))
            continue
        done = [r for r in results if not isinstance(r, Failure)]
        passages = [
            PassageVector(job.item_id, idx, span.start, span.end, vector)
            for idx, (span, vector) in enumerate(zip(job_spans, done[1:], strict=True))
        ]
        vectors[key_of(job)] = Embedded(item, done[0], passages)
    return vectors, failed
