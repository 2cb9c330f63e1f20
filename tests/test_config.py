"""Settings are read once, validated, and bad values name their variable."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from service.config import Settings, environment_variables, load_settings
from service.errors import ConfigError
from service.extras import local_embeddings_installed


def test_defaults_match_the_interface() -> None:
    settings = load_settings({})
    assert settings.database_url is None
    assert settings.http_host == "127.0.0.1"
    assert settings.http_port == 8402
    assert settings.recall_preview_chars == 500
    assert settings.recall_mode == "hybrid"  # measured best (docs/benchmarks/quality.md)
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
            "CPERSONA_HNSW_EF_SEARCH": "250",
            "CPERSONA_RANDOM_PAGE_COST": "4",
            "CPERSONA_EMBEDDED_SHARED_BUFFERS": " 2 GB ",
        }
    )
    assert settings.database_url == "postgresql://u@h/db"
    assert settings.data_dir == Path("/tmp/x")
    assert settings.http_port == 9000  # PORT (Procfile convention) wins
    assert settings.allow_unauthenticated_http is True
    assert settings.allowed_hosts == ("a.example:443", "b.example")
    assert settings.recall_preview_chars == 0
    assert settings.log_level == "DEBUG"
    assert settings.hnsw_ef_search == 250
    assert settings.random_page_cost == 4.0
    assert settings.embedded_shared_buffers == "2GB"
    assert load_settings({}).embedded_shared_buffers == "auto"
    assert load_settings({"CPERSONA_EMBEDDED_SHARED_BUFFERS": "AUTO"}).embedded_shared_buffers == (
        "auto"
    )


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
        ("CPERSONA_HNSW_EF_SEARCH", "0"),
        ("CPERSONA_HNSW_EF_SEARCH", "1001"),  # pgvector's own bound
        ("CPERSONA_RANDOM_PAGE_COST", "0"),
        ("CPERSONA_RANDOM_PAGE_COST", "cheap"),
        ("CPERSONA_EMBEDDED_SHARED_BUFFERS", "512"),  # Postgres would read 8 kB pages
        ("CPERSONA_EMBEDDED_SHARED_BUFFERS", "lots"),
        ("CPERSONA_EMBEDDED_SHARED_BUFFERS", "8MB"),
        ("CPERSONA_EMBEDDED_SHARED_BUFFERS", "2TB"),
        ("CPERSONA_EMBEDDED_SHARED_BUFFERS", "1mb"),  # Postgres's units are case-sensitive
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


def test_response_ceiling_and_metrics_switch() -> None:
    assert load_settings({}).max_response_bytes == 8 * 1024 * 1024
    assert load_settings({}).metrics_enabled is True
    assert load_settings({"CPERSONA_METRICS_ENABLED": "false"}).metrics_enabled is False
    assert load_settings({"CPERSONA_MAX_RESPONSE_BYTES": "70000"}).max_response_bytes == 70_000
    with pytest.raises(ConfigError, match="CPERSONA_METRICS_ENABLED"):
        load_settings({"CPERSONA_METRICS_ENABLED": "maybe"})
    with pytest.raises(ConfigError, match="CPERSONA_MAX_RESPONSE_BYTES"):
        load_settings({"CPERSONA_MAX_RESPONSE_BYTES": "1000"})


def test_embedding_and_queue_defaults() -> None:
    settings = load_settings({})
    assert settings.embedding_mode == ("local" if local_embeddings_installed() else "none")
    assert Settings().embedding_mode == settings.embedding_mode
    assert settings.embedding_inline_timeout_secs == 0.0  # writes never wait (issue 15)
    assert settings.embedding_cache_size == 256
    assert settings.embedding_cache_ttl == 300
    assert settings.task_queue_enabled is True
    assert settings.task_max_retries == 3
    assert settings.task_retry_delay == 30
    assert settings.worker_batch == 32
    assert settings.worker_poll_secs == 1.0
    assert settings.serve_worker is False


def test_embedding_and_queue_values_are_parsed() -> None:
    settings = load_settings(
        {
            "CPERSONA_EMBEDDING_MODE": "none",
            "CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS": "0",
            "CPERSONA_EMBEDDING_CACHE_SIZE": "0",
            "CPERSONA_EMBEDDING_CACHE_TTL": "60",
            "CPERSONA_TASK_QUEUE_ENABLED": "false",
            "CPERSONA_TASK_MAX_RETRIES": "5",
            "CPERSONA_TASK_RETRY_DELAY": "2",
            "CPERSONA_WORKER_BATCH": "8",
            "CPERSONA_WORKER_POLL_SECS": "0.25",
            "CPERSONA_SERVE_WORKER": "true",
        }
    )
    assert settings.embedding_mode == "none"
    assert settings.embedding_inline_timeout_secs == 0.0
    assert (settings.embedding_cache_size, settings.embedding_cache_ttl) == (0, 60.0)
    assert settings.task_queue_enabled is False
    assert (settings.task_max_retries, settings.task_retry_delay) == (5, 2)
    assert (settings.worker_batch, settings.worker_poll_secs) == (8, 0.25)
    assert settings.serve_worker is True
    assert settings.runs_worker_in_serve  # embedded database: always


def test_serve_worker_follows_the_database() -> None:
    external = load_settings({"DATABASE_URL": "postgresql://u@h/db"})
    assert not external.runs_worker_in_serve
    opted_in = load_settings({"DATABASE_URL": "postgresql://u@h/db", "CPERSONA_SERVE_WORKER": "1"})
    assert opted_in.runs_worker_in_serve


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS", "-1"),
        ("CPERSONA_EMBEDDING_CACHE_SIZE", "many"),
        ("CPERSONA_TASK_QUEUE_ENABLED", "perhaps"),
        ("CPERSONA_TASK_MAX_RETRIES", "-1"),
        ("CPERSONA_TASK_RETRY_DELAY", "1.5"),
        ("CPERSONA_WORKER_BATCH", "0"),
        ("CPERSONA_WORKER_POLL_SECS", "0"),
    ],
)
def test_bad_queue_values_fail_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings({name: value})


README = Path(__file__).resolve().parents[1] / "README.md"
RANKING = Path(__file__).resolve().parents[1] / "docs" / "ranking.md"


def _table_variables(path: Path, heading: str) -> set[str]:
    """The variables named in the first column of the table under ``heading`` of ``path``."""
    section = path.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def _documented_variables() -> set[str]:
    """Every variable documented for operators: the README's configuration table, and the
    ranking knobs' table of docs/ranking.md (linked from it)."""
    return _table_variables(README, "## Configuration") | _table_variables(
        RANKING, "## Ranking knobs"
    )


def test_every_setting_is_documented_in_the_readme_or_the_ranking_reference() -> None:
    assert set(environment_variables()) - _documented_variables() == set()


def test_the_documented_tables_name_only_real_settings() -> None:
    assert _documented_variables() - set(environment_variables()) == set()


def test_each_setting_is_documented_in_one_place_and_the_readme_links_the_ranking_knobs() -> None:
    """A setting in both tables would drift apart; the README sends readers to the knobs."""
    readme = _table_variables(README, "## Configuration")
    ranking = _table_variables(RANKING, "## Ranking knobs")
    assert readme & ranking == set()
    assert {"CPERSONA_RECALL_MODE", "CPERSONA_HYBRID_LEXICAL_WEIGHT"} <= ranking
    assert "(docs/ranking.md)" in README.read_text(encoding="utf-8")


def test_every_settings_field_is_read_from_the_environment_or_fixed() -> None:
    for field in dataclasses.fields(Settings):
        assert "env" in field.metadata, field.name
        assert not field.metadata["env"] or callable(field.metadata["parse"]), field.name


def test_oauth_mode_follows_the_public_url_and_the_issuer() -> None:
    assert load_settings({}).oauth_mode == "off"
    public = load_settings({"CPERSONA_PUBLIC_URL": "https://Mem.Example.com/"})
    assert public.oauth_mode == "builtin"
    assert public.oauth_public_base == "https://mem.example.com"
    assert public.oauth_token_audience == "https://mem.example.com/mcp"
    off = {"CPERSONA_PUBLIC_URL": "https://mem.example.com", "CPERSONA_OAUTH_BUILTIN": "false"}
    assert load_settings(off).oauth_mode == "off"
    external = load_settings(
        {"CPERSONA_OAUTH_ISSUER": "https://idp.example/realms/x", "CPERSONA_OAUTH_AUDIENCE": "mem"}
    )
    assert (external.oauth_mode, external.oauth_token_audience) == ("external", "mem")


def test_an_external_issuer_without_an_audience_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"^CPERSONA_OAUTH_AUDIENCE: required"):
        load_settings({"CPERSONA_OAUTH_ISSUER": "https://idp.example"})
    with pytest.raises(ConfigError, match=r"^CPERSONA_OAUTH_ISSUER: expected an http"):
        load_settings({"CPERSONA_OAUTH_ISSUER": "idp.example"})
