"""Settings of export, import and the per-tenant export area."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from service.config.fields import (
    parse_float,
    parse_int,
    parse_origin,
    parse_path,
    parse_signing_key,
    setting,
)


@dataclasses.dataclass(frozen=True)
class PortabilitySettings:
    # -- portability
    export_dir: Path | None = setting(None, "CPERSONA_EXPORT_DIR", parse=parse_path)
    """Root of the per-tenant export areas (``<root>/<tenant uuid>/``); None: data_dir/exports."""
    max_import_bytes: int = setting(
        104_857_600, "CPERSONA_MAX_IMPORT_BYTES", parse=parse_int(1024, 2**40)
    )
    """Largest import file or upload (tool, /v1/import, /v1/files); larger gets 413 / a refusal."""
    export_retention_hours: float = setting(
        24.0, "CPERSONA_EXPORT_RETENTION_HOURS", parse=parse_float(0.01, 87_600)
    )
    export_quota_bytes: int = setting(
        1 << 30, "CPERSONA_EXPORT_QUOTA_BYTES", parse=parse_int(1024, 2**50)
    )
    signing_key: str = dataclasses.field(
        default="",
        repr=False,
        metadata={"env": ("CPERSONA_SIGNING_KEY",), "parse": parse_signing_key},
    )
    """HMAC key of download URLs; '' = a random key kept in data_dir/signing.key."""
    public_url: str = setting("", "CPERSONA_PUBLIC_URL", parse=parse_origin)
    """Origin put in front of download URLs (e.g. https://mem.example.com); '' = a path."""
