"""Settings of the HTTP server, the database and the bounds on stored contents."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import platformdirs

from service.config.fields import (
    POOLERS,
    DbPooler,
    FutureTimestampMode,
    LogFormat,
    fixed,
    parse_bool,
    parse_choice,
    parse_database_url,
    parse_float,
    parse_int,
    parse_list,
    parse_log_level,
    parse_memory_size,
    parse_origins,
    parse_path,
    parse_str,
    setting,
)


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    # -- server and database
    database_url: str | None = setting(None, "DATABASE_URL", parse=parse_database_url)
    data_dir: Path = setting(
        None,
        "CPERSONA_DATA_DIR",
        parse=parse_path,
        factory=lambda: Path(platformdirs.user_data_dir("cpersona-service")),
    )
    embedded_shared_buffers: str = setting(
        "auto", "CPERSONA_EMBEDDED_SHARED_BUFFERS", parse=parse_memory_size(16 * 1024**2, 1024**4)
    )
    """``shared_buffers`` of the embedded Postgres (service/db/embedded.py): ``auto`` sizes
    it to the machine; a Postgres size sets it. Unused with DATABASE_URL."""
    http_host: str = setting("127.0.0.1", "CPERSONA_HTTP_HOST", parse=parse_str)
    http_port: int = setting(8402, "PORT", "CPERSONA_HTTP_PORT", parse=parse_int(1, 65535))
    workers: int = setting(0, "CPERSONA_WORKERS", parse=parse_int(0, 1024))
    """Serving processes (``serve --workers``); 0 = the cores with DATABASE_URL, else 1."""
    allow_unauthenticated_http: bool = setting(
        False, "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", parse=parse_bool
    )
    allowed_hosts: tuple[str, ...] = setting((), "CPERSONA_ALLOWED_HOSTS", parse=parse_list)
    allowed_origins: tuple[str, ...] = setting((), "CPERSONA_ALLOWED_ORIGINS", parse=parse_origins)
    log_format: LogFormat = setting(
        "console", "CPERSONA_LOG_FORMAT", parse=parse_choice("json", "console")
    )
    log_level: str = setting("INFO", "CPERSONA_LOG_LEVEL", parse=parse_log_level)
    db_pool_min: int = setting(1, "CPERSONA_DB_POOL_MIN", parse=parse_int(0, 1000))
    db_pool_max: int = setting(10, "CPERSONA_DB_POOL_MAX", parse=parse_int(1, 1000))
    db_command_timeout: float = setting(
        30.0, "CPERSONA_DB_COMMAND_TIMEOUT", parse=parse_float(0.1, 3600)
    )
    # -- scale-out (docs/scale-out.md): a pooler, a direct URL for migrations, a read replica
    db_pooler: DbPooler = setting("none", "CPERSONA_DB_POOLER", parse=parse_choice(*POOLERS))
    migration_database_url: str | None = setting(
        None, "CPERSONA_MIGRATION_DATABASE_URL", parse=parse_database_url
    )
    read_database_url: str | None = setting(
        None, "CPERSONA_READ_DATABASE_URL", parse=parse_database_url
    )
    read_max_lag_secs: float = setting(
        5.0, "CPERSONA_READ_MAX_LAG_SECS", parse=parse_float(0.0, 86_400)
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
    future_timestamp_skew_seconds: int = setting(
        300, "CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS", parse=parse_int(0, 31_536_000)
    )
    """How far ahead of the server's clock a store's own ``timestamp`` may be (network and
    clock skew) before it counts as a claim about the future."""
    future_timestamp_mode: FutureTimestampMode = setting(
        "warn",
        "CPERSONA_FUTURE_TIMESTAMP_MODE",
        parse=parse_choice("warn", "reject", "off"),
    )
    """What a store timestamp past that allowance costs: ``warn`` stores it and says so in
    the answer (``timestamp_ahead_of_clock``), ``reject`` refuses the write, ``off`` stores
    it silently (docs/tools.md, "store")."""
    max_msg_id_length: int = fixed(512)
    max_axis_length: int = fixed(256)
