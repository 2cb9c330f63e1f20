"""Every setting of the service, read and validated in one place at start-up.

``load_settings(environ)`` is the only function that reads environment
variables. A bad value raises :class:`ConfigError` whose message names the
variable, so the CLI can stop with one clear line instead of failing later in
the middle of a request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import platformdirs

from service.errors import ConfigError

LogFormat = Literal["json", "console"]
RecallMode = Literal["rrf", "rsf", "cascade"]
CalibrateMethod = Literal["separation", "percentile", "zscore"]
RecallPrecision = Literal["strict", "balanced", "lenient"]
EmbeddingMode = Literal["local", "http", "openai", "none"]

_T = TypeVar("_T")
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def local_embeddings_installed() -> bool:
    """Whether the optional ``local`` extra (ONNX model and its libraries) is importable.

    Imported lazily: the check imports numpy and onnxruntime, which only the
    embedding default needs, and it keeps this module free of library imports
    at load time.
    """
    from service.memory.embeddings.factory import local_available

    return local_available()


def default_embedding_mode() -> EmbeddingMode:
    """``local`` when the local extra is installed, else ``none`` (lexical-only recall).

    CPersona's default is ``none``; a hosted service that ships its own model
    embeds by default so vector recall works out of the box.
    """
    return "local" if local_embeddings_installed() else "none"


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Validated configuration. Field names mirror the environment variables."""

    database_url: str | None = None
    data_dir: Path = Path(platformdirs.user_data_dir("cpersona-service"))
    http_host: str = "127.0.0.1"
    http_port: int = 8402
    allow_unauthenticated_http: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    log_format: LogFormat = "console"
    log_level: str = "INFO"
    db_pool_min: int = 1
    db_pool_max: int = 10
    db_command_timeout: float = 30.0
    max_request_bytes: int = 4 * 1024 * 1024
    max_response_bytes: int = 8 * 1024 * 1024
    """Hard ceiling on one MCP response body, the edge's last line of defence.

    The shaping budgets keep legitimate responses far below it. Measured as JSON-RPC bytes
    (the tool's JSON text escaped again inside the envelope): the largest is list_memories
    at 500 rows of 16,000 characters (1,000,000 budgeted plus 500-character previews):
    1.4 MB of ASCII, 3.8 MB of CJK, 5.0 MB of emoji or quote-heavy text. recall with
    full_content (200,000 budgeted plus previews, 100 rows) stays under 1 MB of emoji.
    Only pathological content (control characters, 7 bytes each after double escaping)
    or 8,000-character sources on every row can reach 8 MiB.
    """
    metrics_enabled: bool = True
    recall_preview_chars: int = 500
    recall_mode: RecallMode = "rrf"
    rrf_k: int = 60
    max_content_length: int = 16_000
    max_profile_length: int = 2_000
    max_metadata_length: int = 8_000
    max_msg_id_length: int = 512
    max_axis_length: int = 256
    embedding_mode: EmbeddingMode = dataclasses.field(default_factory=default_embedding_mode)
    embedding_url: str = ""
    embedding_api_key: str = ""
    embedding_model: str = "text-embedding-3-small"
    embedding_timeout_secs: float = 30.0
    embedding_inline_timeout_secs: float = 2.0
    embedding_cache_size: int = 256
    embedding_cache_ttl: float = 300.0
    task_queue_enabled: bool = True
    task_max_retries: int = 3
    task_retry_delay: int = 30
    worker_batch: int = 32
    worker_poll_secs: float = 1.0
    serve_worker: bool = False
    max_memories: int = 10_000
    vector_min_similarity: float = 0.3
    rrf_threshold_factor: float = 0.5
    fts_enabled: bool = True
    autocut_enabled: bool = True
    autocut_min_gap_ratio: float = 0.15
    autocut_min_results: int = 3
    episode_penalty_enabled: bool = True
    episode_decay_rate: float = 0.01
    episode_decay_floor: float = 0.5
    fused_gate_enabled: bool = True
    confidence_enabled: bool = False
    degraded_advisory: bool = True
    rsf_lexical_weight: float = 0.5
    recall_depth: int = 0
    calibrate_sample_size: int = 200
    calibrate_max_sample: int = 2000
    """Upper clamp of calibrate_threshold's sample: the null distribution is all pairs."""
    calibrate_z_factor: float = 1.0
    calibrate_floor: float = 0.05
    calibrate_method: CalibrateMethod = "separation"
    calibrate_percentile: float = 0.95
    calibrate_temporal_window_min: float = 30.0
    fused_gate_sample_queries: int = 40
    fused_gate_calibration_draws: int = 5
    recall_precision: RecallPrecision = "balanced"
    fused_gate_beta: float | None = None
    """The global gate beta; None: the beta of ``recall_precision`` (2.0 / 1.0 / 0.5)."""
    export_dir: Path | None = None
    """Root of the per-tenant export areas (``<root>/<tenant uuid>/``); None: data_dir/exports."""
    max_import_bytes: int = 104_857_600
    """Largest import file or upload (tool, /v1/import, /v1/files); larger gets 413 / a refusal."""
    signing_key: str = dataclasses.field(default="", repr=False)
    """HMAC key of download URLs; '' = a random key kept in data_dir/signing.key."""
    public_url: str = ""
    """Origin put in front of download URLs (e.g. https://mem.example.com); '' = a path."""

    @property
    def uses_embedded_postgres(self) -> bool:
        return self.database_url is None

    @property
    def runs_worker_in_serve(self) -> bool:
        """``serve`` drains the embedding queue itself: always for the embedded database
        (a newcomer runs one process), on request (CPERSONA_SERVE_WORKER) otherwise."""
        return self.uses_embedded_postgres or self.serve_worker


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}: expected true or false, got {raw!r}")


def _parse_int(minimum: int, maximum: int) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected an integer, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def _parse_float(minimum: float, maximum: float) -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected a number, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def _parse_choice(*choices: str) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse


def _parse_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _parse_str(name: str, raw: str) -> str:
    return raw.strip()


def _parse_path(name: str, raw: str) -> Path:
    if not raw.strip():
        raise ConfigError(f"{name}: must not be empty")
    return Path(raw.strip()).expanduser()


def _parse_log_level(name: str, raw: str) -> str:
    value = raw.strip().upper()
    if value not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL, got {raw!r}")
    return value


class _Reader:
    """Reads variables from one environment mapping, naming them in errors."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.values: dict[str, Any] = {}

    def read(self, field: str, parse: Callable[[str, str], _T], *names: str) -> None:
        for name in names:
            raw = self._environ.get(name)
            if raw is not None and raw.strip() != "":
                self.values[field] = parse(name, raw)
                return

    def raw(self, name: str) -> str | None:
        return self._environ.get(name)


def _read_server(r: _Reader) -> None:
    r.read("database_url", _parse_str, "DATABASE_URL")
    r.read("data_dir", _parse_path, "CPERSONA_DATA_DIR")
    r.read("http_host", _parse_str, "CPERSONA_HTTP_HOST")
    r.read("http_port", _parse_int(1, 65535), "PORT", "CPERSONA_HTTP_PORT")
    r.read("allow_unauthenticated_http", _parse_bool, "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP")
    r.read("allowed_hosts", _parse_list, "CPERSONA_ALLOWED_HOSTS")
    r.read("allowed_origins", _parse_list, "CPERSONA_ALLOWED_ORIGINS")
    r.read("log_format", _parse_choice("json", "console"), "CPERSONA_LOG_FORMAT")
    r.read("log_level", _parse_log_level, "CPERSONA_LOG_LEVEL")
    r.read("db_pool_min", _parse_int(0, 1000), "CPERSONA_DB_POOL_MIN")
    r.read("db_pool_max", _parse_int(1, 1000), "CPERSONA_DB_POOL_MAX")
    r.read("db_command_timeout", _parse_float(0.1, 3600), "CPERSONA_DB_COMMAND_TIMEOUT")
    r.read("max_request_bytes", _parse_int(1024, 2**31), "CPERSONA_MAX_REQUEST_BYTES")
    r.read("max_response_bytes", _parse_int(65_536, 2**31), "CPERSONA_MAX_RESPONSE_BYTES")
    r.read("metrics_enabled", _parse_bool, "CPERSONA_METRICS_ENABLED")


def _read_memory(r: _Reader) -> None:
    r.read("recall_preview_chars", _parse_int(0, 1_000_000), "CPERSONA_RECALL_PREVIEW_CHARS")
    r.read("recall_mode", _parse_choice("rrf", "rsf", "cascade"), "CPERSONA_RECALL_MODE")
    r.read("rrf_k", _parse_int(1, 100_000), "CPERSONA_RRF_K")
    r.read("max_content_length", _parse_int(1, 1_000_000), "CPERSONA_MAX_CONTENT_LENGTH")
    r.read("max_profile_length", _parse_int(1, 1_000_000), "CPERSONA_MAX_PROFILE_LENGTH")
    r.read("max_metadata_length", _parse_int(2, 1_000_000), "CPERSONA_MAX_METADATA_LENGTH")
    modes = _parse_choice("local", "http", "openai", "none")
    r.read("embedding_mode", modes, "CPERSONA_EMBEDDING_MODE", "EMBEDDING_MODE")
    r.read("embedding_url", _parse_str, "CPERSONA_EMBEDDING_URL", "EMBEDDING_HTTP_URL")
    r.read("embedding_api_key", _parse_str, "CPERSONA_EMBEDDING_API_KEY", "EMBEDDING_API_KEY")
    r.read("embedding_model", _parse_str, "CPERSONA_EMBEDDING_MODEL", "EMBEDDING_MODEL")
    timeout = _parse_float(0.1, 600)
    r.read("embedding_timeout_secs", timeout, "CPERSONA_EMBEDDING_TIMEOUT_SECS")
    inline = _parse_float(0.0, 600)
    r.read("embedding_inline_timeout_secs", inline, "CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS")
    r.read("embedding_cache_size", _parse_int(0, 1_000_000), "CPERSONA_EMBEDDING_CACHE_SIZE")
    r.read("embedding_cache_ttl", _parse_float(0, 86_400), "CPERSONA_EMBEDDING_CACHE_TTL")


def _read_queue(r: _Reader) -> None:
    r.read("task_queue_enabled", _parse_bool, "CPERSONA_TASK_QUEUE_ENABLED")
    r.read("task_max_retries", _parse_int(0, 100), "CPERSONA_TASK_MAX_RETRIES")
    r.read("task_retry_delay", _parse_int(0, 86_400), "CPERSONA_TASK_RETRY_DELAY")
    r.read("worker_batch", _parse_int(1, 10_000), "CPERSONA_WORKER_BATCH")
    r.read("worker_poll_secs", _parse_float(0.01, 3600), "CPERSONA_WORKER_POLL_SECS")
    r.read("serve_worker", _parse_bool, "CPERSONA_SERVE_WORKER")


def _read_recall(r: _Reader) -> None:
    r.read("max_memories", _parse_int(1, 1_000_000), "CPERSONA_MAX_MEMORIES")
    unit = _parse_float(0.0, 1.0)
    r.read("vector_min_similarity", unit, "CPERSONA_VECTOR_MIN_SIMILARITY")
    r.read("rrf_threshold_factor", _parse_float(0.0, 10.0), "CPERSONA_RRF_THRESHOLD_FACTOR")
    r.read("fts_enabled", _parse_bool, "CPERSONA_FTS_ENABLED")
    r.read("autocut_enabled", _parse_bool, "CPERSONA_AUTOCUT_ENABLED")
    r.read("autocut_min_gap_ratio", unit, "CPERSONA_AUTOCUT_MIN_GAP_RATIO")
    r.read("autocut_min_results", _parse_int(2, 1000), "CPERSONA_AUTOCUT_MIN_RESULTS")
    r.read("episode_penalty_enabled", _parse_bool, "CPERSONA_EPISODE_PENALTY_ENABLED")
    r.read("episode_decay_rate", _parse_float(0.0, 100.0), "CPERSONA_EPISODE_DECAY_RATE")
    r.read("episode_decay_floor", unit, "CPERSONA_EPISODE_DECAY_FLOOR")
    r.read("fused_gate_enabled", _parse_bool, "CPERSONA_FUSED_GATE_ENABLED")
    r.read("confidence_enabled", _parse_bool, "CPERSONA_CONFIDENCE_ENABLED")
    r.read("degraded_advisory", _parse_bool, "CPERSONA_DEGRADED_ADVISORY")
    r.read("rsf_lexical_weight", unit, "CPERSONA_RSF_LEXICAL_WEIGHT")
    r.read("recall_depth", _parse_int(0, 1000), "CPERSONA_RECALL_DEPTH")


def _read_calibration(r: _Reader) -> None:
    r.read("calibrate_sample_size", _parse_int(1, 5000), "CPERSONA_CALIBRATE_SAMPLE_SIZE")
    r.read("calibrate_max_sample", _parse_int(10, 5000), "CPERSONA_CALIBRATE_MAX_SAMPLE")
    r.read("calibrate_z_factor", _parse_float(-10.0, 10.0), "CPERSONA_CALIBRATE_Z_FACTOR")
    r.read("calibrate_floor", _parse_float(0.0, 1.0), "CPERSONA_CALIBRATE_FLOOR")
    methods = _parse_choice("separation", "percentile", "zscore")
    r.read("calibrate_method", methods, "CPERSONA_CALIBRATE_METHOD")
    r.read("calibrate_percentile", _parse_float(0.001, 1.0), "CPERSONA_CALIBRATE_PERCENTILE")
    window = _parse_float(0.0, 10_080.0)
    r.read("calibrate_temporal_window_min", window, "CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN")
    queries = _parse_int(1, 1000)
    r.read("fused_gate_sample_queries", queries, "CPERSONA_FUSED_GATE_SAMPLE_QUERIES")
    draws = _parse_int(1, 51)
    r.read("fused_gate_calibration_draws", draws, "CPERSONA_FUSED_GATE_CALIBRATION_DRAWS")
    levels = _parse_choice("strict", "balanced", "lenient")
    r.read("recall_precision", levels, "CPERSONA_RECALL_PRECISION")
    r.read("fused_gate_beta", _parse_float(0.001, 1000.0), "CPERSONA_FUSED_GATE_BETA")


def _parse_signing_key(name: str, raw: str) -> str:
    if len(raw.strip()) < 32:
        raise ConfigError(f"{name}: must be at least 32 characters (a random secret)")
    return raw.strip()


def _parse_public_url(name: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ConfigError(f"{name}: expected an http:// or https:// origin, got {raw!r}")
    return value


def _read_portability(r: _Reader) -> None:
    r.read("export_dir", _parse_path, "CPERSONA_EXPORT_DIR")
    r.read("max_import_bytes", _parse_int(1024, 2**40), "CPERSONA_MAX_IMPORT_BYTES")
    r.read("signing_key", _parse_signing_key, "CPERSONA_SIGNING_KEY")
    r.read("public_url", _parse_public_url, "CPERSONA_PUBLIC_URL")


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


def load_settings(environ: Mapping[str, str], *, stderr_is_tty: bool = False) -> Settings:
    """Build validated :class:`Settings` from an environment mapping.

    ``stderr_is_tty`` picks the default log format: readable on a terminal,
    JSON otherwise (production). Raises ConfigError naming the variable.
    """
    reader = _Reader(environ)
    reader.values["log_format"] = "console" if stderr_is_tty else "json"
    _read_server(reader)
    _read_memory(reader)
    _read_recall(reader)
    _read_calibration(reader)
    _read_queue(reader)
    _read_portability(reader)
    settings = Settings(**reader.values)
    _check_consistency(settings)
    return settings
