"""Resumable recall: a signed cursor naming the rows an answer left out, in order.

When ``max_tokens`` leaves rows out of a recall answer, the answer carries
``next_cursor``; passing it back resumes exactly there. The cursor itself carries the
ordered refs still to deliver and the shaping options, so the next page is resolved by
ref (like ``get_contents``, with the same ownership predicate) and never depends on
running the ranking again: pages cannot overlap or skip a row even when new memories
arrive or scores drift in between. Nothing is stored on the server, so any replica
resumes any cursor.

A cursor is ``base64url(payload || mac)``: the payload is a version, the expiry, the
options and the refs (each ``id << 1 | is_episode`` as a varint, about two or three bytes
a ref); the mac is HMAC-SHA256 over the payload *and* the binding — tenant, key, agent,
tool and query — truncated to 128 bits. The binding is not in the payload: a cursor is
valid only when presented by the same key for the same agent, tool and query, and a
cursor of another tenant, key or agent fails exactly like a tampered one. The key is
derived from the download-signing secret (``CPERSONA_SIGNING_KEY`` or
``<data dir>/signing.key``), so replicas that share one already share cursors.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from service.errors import Refused
from service.memory.library import Library
from service.memory.portability.signing import signing_key
from service.models import TenantId

VERSION: Final = 1
MAC_BYTES: Final = 16
MAX_CURSOR_CHARS: Final = 4096
"""Longer than any cursor this service issues (100 refs need about 400 characters)."""

INVALID: Final = (
    "invalid cursor: pass next_cursor exactly as received, with the same agent_id and query "
    "and the same API key"
)
EXPIRED: Final = "cursor expired: recall again (a cursor is valid for {minutes} minutes)"
_DOMAIN: Final = b"cpersona-service recall cursor v1"
_HEADER: Final = struct.Struct(">BIB")
_FULL_CONTENT, _NOVEL_ON, _NOVEL_OFF = 1, 2, 4

Kind = Literal["mem", "ep"]


@dataclasses.dataclass(frozen=True, slots=True)
class Binding:
    """Who may resume a cursor: it is valid only for exactly these."""

    tenant_id: TenantId
    key_id: str
    agent_id: str
    tool: str
    query: str

    def encoded(self) -> bytes:
        fields = (str(self.tenant_id), self.key_id, self.agent_id, self.tool, self.query)
        return b"".join(_length_prefixed(field.encode("utf-8")) for field in fields)


@dataclasses.dataclass(frozen=True, slots=True)
class Cursor:
    """The rest of an answer: refs best first and how to shape them."""

    refs: tuple[tuple[Kind, int], ...]
    full_content: bool = False
    novel_only: bool | None = None
    max_tokens: int | None = None


def _length_prefixed(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varints(data: bytes) -> Iterator[int]:
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")
        if not byte & 0x80:
            yield value
            value = shift = 0
    if shift:
        raise ValueError("truncated varint")


def _key(lib: Library) -> bytes:
    return hmac.new(signing_key(lib.settings), _DOMAIN, hashlib.sha256).digest()


def _mac(key: bytes, binding: Binding, payload: bytes) -> bytes:
    return hmac.new(key, binding.encoded() + payload, hashlib.sha256).digest()[:MAC_BYTES]


def _flags(cursor: Cursor) -> int:
    novel = {True: _NOVEL_ON, False: _NOVEL_OFF, None: 0}[cursor.novel_only]
    return (_FULL_CONTENT if cursor.full_content else 0) | novel


def issue(lib: Library, binding: Binding, cursor: Cursor) -> str:
    """A cursor for ``cursor`` valid for ``CPERSONA_RECALL_CURSOR_TTL`` seconds."""
    expires = datetime.now(UTC) + timedelta(seconds=lib.settings.recall_cursor_ttl)
    header = _HEADER.pack(VERSION, int(expires.timestamp()), _flags(cursor))
    body = _varint(cursor.max_tokens or 0) + b"".join(
        _varint(row_id << 1 | (kind == "ep")) for kind, row_id in cursor.refs
    )
    payload = header + body
    token = payload + _mac(_key(lib), binding, payload)
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii")


def _decoded(token: str) -> bytes:
    if not isinstance(token, str) or not 0 < len(token) <= MAX_CURSOR_CHARS:
        raise Refused(INVALID)
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise Refused(INVALID) from None


def _parse(payload: bytes) -> tuple[int, Cursor]:
    version, expires, flags = _HEADER.unpack_from(payload)
    if version != VERSION:
        raise ValueError("unknown cursor version")
    numbers = list(_varints(payload[_HEADER.size :]))
    if not numbers:
        raise ValueError("no max_tokens")
    refs: Sequence[tuple[Kind, int]] = tuple(
        ("ep" if number & 1 else "mem", number >> 1) for number in numbers[1:]
    )
    novel = True if flags & _NOVEL_ON else False if flags & _NOVEL_OFF else None
    cursor = Cursor(tuple(refs), bool(flags & _FULL_CONTENT), novel, numbers[0] or None)
    return expires, cursor


def open_cursor(lib: Library, binding: Binding, token: str) -> Cursor:
    """The cursor ``token`` carries, or Refused: not authentic for ``binding``, or expired.

    Authenticity is checked first, so an expired cursor is only reported as expired to
    the caller it was issued to.
    """
    data = _decoded(token)
    payload, mac = data[:-MAC_BYTES], data[-MAC_BYTES:]
    if len(data) <= _HEADER.size + MAC_BYTES or not hmac.compare_digest(
        mac, _mac(_key(lib), binding, payload)
    ):
        raise Refused(INVALID)
    try:
        expires, cursor = _parse(payload)
    except (ValueError, struct.error):
        raise Refused(INVALID) from None
    if datetime.now(UTC).timestamp() >= expires:
        minutes = max(1, lib.settings.recall_cursor_ttl // 60)
        raise Refused(EXPIRED.format(minutes=minutes))
    return cursor


def format_ref(kind: Kind, row_id: int) -> str:
    """``mem:<id>`` / ``ep:<id>``."""
    return f"{kind}:{row_id}"
