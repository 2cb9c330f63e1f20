"""Settings of the embedding provider and of the durable embedding queue."""

from __future__ import annotations

import dataclasses
from typing import Final

from service.config.fields import (
    EmbeddingMode,
    default_embedding_mode,
    parse_bool,
    parse_choice,
    parse_float,
    parse_int,
    parse_str,
    setting,
)

DEFAULT_PASSAGE_SPREAD: Final = 0.07
"""The local model's spread of query-passage cosines for unrelated text: the standard
deviation of one query's cosines with ~1,000-character passages of other conversations,
0.073 on average over 60 LoCoMo questions and 300 passages (docs/benchmarks/passages.md,
"Length-neutral scores"). Another model has its own spread (``CPERSONA_PASSAGE_SPREAD``)."""


@dataclasses.dataclass(frozen=True)
class EmbeddingSettings:
    # -- embeddings
    embedding_mode: EmbeddingMode = setting(
        None,
        "CPERSONA_EMBEDDING_MODE",
        "EMBEDDING_MODE",
        parse=parse_choice("local", "local-e5", "http", "openai", "none"),
        factory=default_embedding_mode,
    )
    embedding_url: str = setting(
        "", "CPERSONA_EMBEDDING_URL", "EMBEDDING_HTTP_URL", parse=parse_str
    )
    embedding_api_key: str = setting(
        "", "CPERSONA_EMBEDDING_API_KEY", "EMBEDDING_API_KEY", parse=parse_str
    )
    embedding_model: str = setting(
        "text-embedding-3-small", "CPERSONA_EMBEDDING_MODEL", "EMBEDDING_MODEL", parse=parse_str
    )
    embedding_timeout_secs: float = setting(
        30.0, "CPERSONA_EMBEDDING_TIMEOUT_SECS", parse=parse_float(0.1, 600)
    )
    embedding_inline_timeout_secs: float = setting(
        0.0, "CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS", parse=parse_float(0.0, 600)
    )
    """0: a write commits and answers at once and its row is embedded moments later
    (found lexically meanwhile); > 0: a write waits up to this long for its vector."""
    embedding_batch_size: int = setting(
        32, "CPERSONA_EMBEDDING_BATCH_SIZE", parse=parse_int(1, 4096)
    )
    embedding_batch_window_ms: float = setting(
        2.0, "CPERSONA_EMBEDDING_BATCH_WINDOW_MS", parse=parse_float(0.0, 1000)
    )
    embedding_cache_size: int = setting(
        256, "CPERSONA_EMBEDDING_CACHE_SIZE", parse=parse_int(0, 1_000_000)
    )
    embedding_cache_ttl: float = setting(
        300.0, "CPERSONA_EMBEDDING_CACHE_TTL", parse=parse_float(0, 86_400)
    )
    embedding_dimensions: int = setting(
        0, "CPERSONA_EMBEDDING_DIMENSIONS", parse=parse_int(0, 16_000)
    )
    """The model's vector width; 0 = the model's known width (required when unknown)."""
    embedding_query_timeout_secs: float = setting(
        1.0, "CPERSONA_EMBEDDING_QUERY_TIMEOUT_SECS", parse=parse_float(0.01, 600)
    )
    embedding_breaker_failures: int = setting(
        5, "CPERSONA_EMBEDDING_BREAKER_FAILURES", parse=parse_int(0, 1000)
    )
    embedding_breaker_cooldown_secs: float = setting(
        10.0, "CPERSONA_EMBEDDING_BREAKER_COOLDOWN_SECS", parse=parse_float(0.01, 3600)
    )

    passages_enabled: bool = setting(True, "CPERSONA_PASSAGES", parse=parse_bool)
    """Divide memories and episodes longer than one embedding window into passages, each
    with its own vector, built by the queue (docs/architecture.md, "Passages")."""
    passage_spread: float = setting(
        DEFAULT_PASSAGE_SPREAD, "CPERSONA_PASSAGE_SPREAD", parse=parse_float(0.0, 1.0)
    )
    """Standard deviation of a query's cosines with unrelated passages: a record of ``n``
    passages has its best cosine lowered by this times the expected maximum of ``n`` normal
    draws (``memory.recall.passage_gain``; 0 = the raw best)."""

    # -- the embedding queue
    task_queue_enabled: bool = setting(True, "CPERSONA_TASK_QUEUE_ENABLED", parse=parse_bool)
    task_max_retries: int = setting(3, "CPERSONA_TASK_MAX_RETRIES", parse=parse_int(0, 100))
    task_retry_delay: int = setting(30, "CPERSONA_TASK_RETRY_DELAY", parse=parse_int(0, 86_400))
    worker_batch: int = setting(32, "CPERSONA_WORKER_BATCH", parse=parse_int(1, 10_000))
    worker_poll_secs: float = setting(
        1.0, "CPERSONA_WORKER_POLL_SECS", parse=parse_float(0.01, 3600)
    )
    serve_worker: bool = setting(False, "CPERSONA_SERVE_WORKER", parse=parse_bool)
