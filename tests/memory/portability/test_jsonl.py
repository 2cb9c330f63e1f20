"""Pure pieces of portability: the record encodings, line splitting, file names, signed
download tokens (no database)."""

from __future__ import annotations

import base64
import struct
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from service.config import Settings, load_settings
from service.errors import ConfigError
from service.memory.portability import files, import_, jsonl, signing
from service.models import TenantId


def test_times_are_written_like_sqlite_and_read_in_both_forms() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=timezone(timedelta(hours=2)))
    assert jsonl.cpersona_time(moment) == "2026-03-04 03:06:07"
    assert jsonl.cpersona_time(None) is None
    expected = datetime(2026, 3, 4, 3, 6, 7, tzinfo=UTC)
    assert jsonl.parse_time("2026-03-04 03:06:07") == expected
    assert jsonl.parse_time("2026-03-04T05:06:07+02:00") == expected
    assert jsonl.parse_time("2026-03-04T03:06:07Z") == expected
    assert jsonl.parse_time(None) is None
    assert jsonl.parse_time("") is None
    for bad in ("yesterday", 17, "2026-13-01 00:00:00"):
        with pytest.raises(ValueError, match="not a timestamp"):
            jsonl.parse_time(bad)


@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1))
def test_embeddings_round_trip_exactly_as_little_endian_float32(values: list[float]) -> None:
    encoded = jsonl.encode_embedding(values)
    assert base64.b64decode(encoded) == struct.pack(f"<{len(values)}f", *values)
    assert jsonl.decode_embedding(encoded) == values


def test_unstorable_embeddings_are_refused_with_a_reason() -> None:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    assert jsonl.decode_embedding(None) is None
    assert jsonl.decode_embedding("") is None
    cases = {
        b64(b"\0" * 6): "not a whole number",
        "%%%": "not base64",
        b64(struct.pack("<2f", 1.0, float("nan"))): "NaN or infinity",
        b64(struct.pack("<2f", float("inf"), float("-inf"))): "NaN or infinity",
        b64(b"\0" * 4 * 16_001): "16001 dimensions",
    }
    for value, reason in cases.items():
        with pytest.raises(ValueError, match=reason):
            jsonl.decode_embedding(value)
    with pytest.raises(ValueError, match="not a string"):
        jsonl.decode_embedding(12)


def test_lines_are_split_on_newlines_only_with_bounded_memory() -> None:
    splitter = jsonl.LineSplitter(max_line=10)
    out = splitter.feed(b"ab\ncd")
    out += splitter.feed("e\u2028".encode() + b"\n\n")  # U+2028 is not a line break here
    out += splitter.feed(b"x" * 8)
    out += splitter.feed(b"y" * 8)  # this line grows past 10 bytes: dropped, reported as None
    out += splitter.feed(b"\nlast")
    out += splitter.finish()
    assert out == [(1, b"ab"), (2, "cde\u2028".encode()), (3, b""), (4, None), (5, b"last")]
    assert jsonl.LineSplitter(10).finish() == []


@given(st.binary(max_size=200), st.integers(min_value=1, max_value=50))
def test_any_chunking_gives_the_same_lines(data: bytes, cut: int) -> None:
    whole = jsonl.LineSplitter(1000)
    expected = whole.feed(data) + whole.finish()
    pieces = jsonl.LineSplitter(1000)
    got = [line for at in range(0, len(data), cut) for line in pieces.feed(data[at : at + cut])]
    assert got + pieces.finish() == expected
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    assert [raw for _, raw in expected] == parts
    assert [number for number, _ in expected] == list(range(1, len(parts) + 1))


def test_names_must_be_relative_file_names() -> None:
    """Names are keys of the area's catalogue, never paths on disk (files are stored
    under random names), so a symlink in the area cannot redirect one; they are still
    held to CPersona's path-traversal refusal so they stay portable file names."""
    for bad in (
        "",
        ".",
        "./",
        "..",
        "../x",
        "a/../../x",
        "/etc/passwd",
        "x\x00y",
        "a" * 1025,
        "d/",
        "\ud800lonely",  # a lone surrogate: no file system or database can hold it
    ):
        assert not files.name_is_valid(bad), bad
        with pytest.raises(files.PathRejected, match="path traversal"):
            files.check_name(bad, "output_path")
    for good in ("x.jsonl", "sub/dir/x.jsonl", "a..b.jsonl", "..hidden", "./x.jsonl"):
        assert files.name_is_valid(good), good


def test_tokens_are_bound_to_tenant_file_version_and_key() -> None:
    tenant = TenantId(uuid.uuid4())
    token, expires_at = signing.issue(b"k" * 32, tenant, "dir/f.jsonl", "fabc.jsonl")
    grant = signing.verify(b"k" * 32, token)
    assert grant == signing.Grant(tenant, "dir/f.jsonl", "fabc.jsonl", expires_at)
    assert not grant.expired
    assert signing.verify(b"x" * 32, token) is None
    head, tail = token.split(".")
    forged = base64.urlsafe_b64encode(b'{"t":"' + str(uuid.uuid4()).encode() + b'","f":"f","e":9}')
    assert signing.verify(b"k" * 32, forged.decode().rstrip("=") + "." + tail) is None
    for junk in ("", "nodot", "a.b", "!!.??", head + "."):
        assert signing.verify(b"k" * 32, junk) is None
    old, _ = signing.issue(b"k" * 32, tenant, "f", "s", ttl=timedelta(seconds=-1))
    old_grant = signing.verify(b"k" * 32, old)
    assert old_grant is not None
    assert old_grant.expired


def test_portability_settings_are_read_and_validated() -> None:
    defaults = load_settings({})
    assert (defaults.export_dir, defaults.max_import_bytes) == (None, 104_857_600)
    assert (defaults.signing_key, defaults.public_url) == ("", "")
    assert files.export_root(defaults) == defaults.data_dir / "exports"
    custom = load_settings(
        {
            "CPERSONA_EXPORT_DIR": "/srv/exports",
            "CPERSONA_MAX_IMPORT_BYTES": "2048",
            "CPERSONA_SIGNING_KEY": "s" * 40,
            "CPERSONA_PUBLIC_URL": "https://mem.example.com/",
        }
    )
    assert files.export_root(custom) == Path("/srv/exports")
    assert custom.max_import_bytes == 2048
    assert custom.public_url == "https://mem.example.com"
    assert "s" * 40 not in repr(custom)
    for name, value in (
        ("CPERSONA_SIGNING_KEY", "too short"),
        ("CPERSONA_PUBLIC_URL", "mem.example.com"),
        ("CPERSONA_MAX_IMPORT_BYTES", "-1"),
    ):
        with pytest.raises(ConfigError, match=name):
            load_settings({name: value})


def test_the_generated_signing_key_is_made_once_and_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    first = signing.signing_key(settings)
    assert len(first) == 32
    assert signing.signing_key(settings) == first
    assert (tmp_path / signing.KEY_FILE).stat().st_mode & 0o777 == 0o600
    (tmp_path / signing.KEY_FILE).write_text("not hex")
    with pytest.raises(ConfigError, match="not a signing key"):
        signing.signing_key(settings)


def test_the_upload_scanner_records_only_agents_a_database_can_name() -> None:
    """An upload records the agents its lines name (for the import's grants); a name with a
    lone surrogate can name no agent (the import refuses such a line), so it is not
    recorded and never reaches a query (the fuzz test's 500)."""
    scanner = import_.AgentScanner()
    scanner.feed(b'{"_type": "memory", "agent_id": "\\ud800lonely", "content": "x"}\n')
    scanner.feed(b'{"_type": "memory", "agent_id": "a", "content": "y"}\n')
    assert scanner.finish() == {"a"}
