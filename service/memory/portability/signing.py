"""Short-lived signed download tokens for files in a tenant's export area.

A token is ``<base64url payload>.<base64url HMAC-SHA256>`` where the payload
names the tenant, the file, the version of it (its storage name) and the expiry.
The HMAC key is ``CPERSONA_SIGNING_KEY`` or, when unset, a random secret created
once in the data directory (``signing.key``, owner-only); replicas that serve
the same downloads must share one key. A token is only honoured for a caller
authenticated as the same tenant whose key may read every agent the file holds
(checked at download time by the HTTP layer against the downloader's own key), so a
leaked URL alone gives nothing, another key's URL gives nothing its own grants do
not, a tenant cannot edit a token to reach another file, and a token stops working
once its file is replaced or deleted.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import os
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from service.config import Settings
from service.errors import ConfigError
from service.models import TenantId

TTL = timedelta(minutes=15)
KEY_FILE = "signing.key"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _read_key(path: Path) -> bytes:
    try:
        return bytes.fromhex(path.read_text().strip())
    except ValueError:
        raise ConfigError(
            f"{path}: not a signing key (delete it to make a new one, or set CPERSONA_SIGNING_KEY)"
        ) from None


def _key_file(path: Path) -> bytes:
    """The secret in ``path``, created (0600) on first use.

    The new key is written to a private temporary file and hard-linked into
    place, so a concurrent reader never sees a half-written key and two
    processes racing to create it agree on the one that won.
    """
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_bytes(32).hex())
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass  # another process won the race: use its key
    finally:
        temporary.unlink()
    return _read_key(path)


def signing_key(settings: Settings) -> bytes:
    if settings.signing_key:
        return settings.signing_key.encode("utf-8")
    return _key_file(settings.data_dir / KEY_FILE)


@dataclasses.dataclass(frozen=True, slots=True)
class Grant:
    """What a valid token names: one version (``storage``) of one file of one tenant,
    until ``expires_at``."""

    tenant_id: TenantId
    name: str
    storage: str
    expires_at: datetime

    @property
    def expired(self) -> bool:
        return datetime.now(UTC) >= self.expires_at


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


def issue(
    key: bytes, tenant_id: TenantId, name: str, storage: str, ttl: timedelta = TTL
) -> tuple[str, datetime]:
    """A token for version ``storage`` of file ``name`` of ``tenant_id`` and its expiry
    (now + ``ttl``, 15 minutes)."""
    expires_at = (datetime.now(UTC) + ttl).replace(microsecond=0)
    payload = json.dumps(
        {"t": str(tenant_id), "f": name, "s": storage, "e": int(expires_at.timestamp())},
        separators=(",", ":"),
    ).encode("utf-8")
    return f"{_b64(payload)}.{_b64(_mac(key, payload))}", expires_at


def verify(key: bytes, token: str) -> Grant | None:
    """The grant of an authentic token (expired ones too: the caller says so); else None."""
    head, dot, tail = token.partition(".")
    if not dot:
        return None
    try:
        payload, mac = _unb64(head), _unb64(tail)
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(mac, _mac(key, payload)):
        return None
    try:
        fields = json.loads(payload)
        return Grant(
            TenantId(uuid.UUID(fields["t"])),
            str(fields["f"]),
            str(fields["s"]),
            datetime.fromtimestamp(int(fields["e"]), UTC),
        )
    except (ValueError, KeyError, TypeError):
        return None
