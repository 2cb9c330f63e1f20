"""Settings are read once, validated, and bad values name their variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.config import Settings, load_settings
from service.errors import ConfigError


def test_defaults_match_the_interface() -> None:
    settings = load_settings({})
    assert settings.database_url is None
    assert settings.http_host == "127.0.0.1"
    assert settings.http_port == 8402
    assert settings.recall_preview_chars == 500
    assert settings.recall_mode == "rrf"
    assert settings.rrf_k == 60
    assert settings.max_content_length == 16_000
    assert settings.allow_unauthenticated_http is False
    assert settings.log_format == "json"
    assert load_settings({}, stderr_is_tty=True).log_format == "console"


def test_values_are_parsed() -> None:
    settings = load_settings(
        {
            "DATABASE_URL": "postgresql://u@h/db",
            "CPERSONA_DATA_DIR": "/tmp/x",
            "PORT": "9000",
            "CPERSONA_HTTP_PORT": "1234",
            "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP": "TRUE",
            "CPERSONA_ALLOWED_HOSTS": "a.example:443, b.example",
            "CPERSONA_RECALL_PREVIEW_CHARS": "0",
            "CPERSONA_LOG_LEVEL": "debug",
        }
    )
    assert settings.database_url == "postgresql://u@h/db"
    assert settings.data_dir == Path("/tmp/x")
    assert settings.http_port == 9000  # PORT (Procfile convention) wins
    assert settings.allow_unauthenticated_http is True
    assert settings.allowed_hosts == ("a.example:443", "b.example")
    assert settings.recall_preview_chars == 0
    assert settings.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CPERSONA_HTTP_PORT", "http"),
        ("PORT", "70000"),
        ("CPERSONA_RECALL_PREVIEW_CHARS", "-1"),
        ("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", "maybe"),
        ("CPERSONA_RECALL_MODE", "fancy"),
        ("CPERSONA_LOG_FORMAT", "xml"),
        ("CPERSONA_RRF_K", "0"),
        ("CPERSONA_EMBEDDING_MODE", "magic"),
    ],
)
def test_bad_values_fail_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value})


def test_http_embeddings_need_a_url() -> None:
    with pytest.raises(ConfigError, match="CPERSONA_EMBEDDING_URL"):
        load_settings({"CPERSONA_EMBEDDING_MODE": "http"})


def test_settings_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Settings().http_port = 1  # type: ignore[misc]
